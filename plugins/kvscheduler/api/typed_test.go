package api

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
)

type testMeta struct{ index uint32 }

// typedTestDescriptor records what its typed callbacks were given.
func typedTestDescriptor(calls *[]string) *KVDescriptor {
	return Typed(TypedDescriptor[*wrapperspb.StringValue, *testMeta]{
		Name:        "test-typed",
		KeySelector: func(key string) bool { return strings.HasPrefix(key, "test/") },
		Validate: func(_ string, v *wrapperspb.StringValue) error {
			if v.GetValue() == "" {
				return NewInvalidValueError(errors.New("empty"), "value")
			}
			return nil
		},
		Create: func(_ string, v *wrapperspb.StringValue) (*testMeta, error) {
			*calls = append(*calls, "create "+v.GetValue())
			return &testMeta{index: uint32(len(v.GetValue()))}, nil
		},
		Delete: func(_ string, v *wrapperspb.StringValue, m *testMeta) error {
			*calls = append(*calls, "delete "+v.GetValue())
			return nil
		},
		Update: func(_ string, o, n *wrapperspb.StringValue, m *testMeta) (*testMeta, error) {
			*calls = append(*calls, "update "+o.GetValue()+"->"+n.GetValue())
			return nil, nil
		},
		UpdateAsync: func(_ string, o, n *wrapperspb.StringValue, m *testMeta) func() (*testMeta, error) {
			*calls = append(*calls, "start update "+o.GetValue()+"->"+n.GetValue())
			return func() (*testMeta, error) {
				*calls = append(*calls, "wait update "+o.GetValue()+"->"+n.GetValue())
				return &testMeta{index: m.index + 1}, nil
			}
		},
		DeleteAsync: func(_ string, v *wrapperspb.StringValue, m *testMeta) func() error {
			*calls = append(*calls, "start delete "+v.GetValue())
			return func() error {
				*calls = append(*calls, fmt.Sprintf("wait delete %s (metadata %d)", v.GetValue(), m.index))
				return nil
			}
		},
		ValueComparator: func(_ string, a, b *wrapperspb.StringValue) bool {
			return strings.EqualFold(a.GetValue(), b.GetValue())
		},
		IsRetriableFailure: func(error) bool { return true },
		Dependencies: func(_ string, v *wrapperspb.StringValue) []Dependency {
			return []Dependency{{Label: "dep", Key: "test/" + v.GetValue()}}
		},
	})
}

// TestTypedDescriptorRejectsWrongTypedValue: a value of another type is INVALID at
// Validate and an error (not retriable) in Create, Update and Delete, naming the key,
// the descriptor and both types; the typed callbacks are never called with it.
func TestTypedDescriptorRejectsWrongTypedValue(t *testing.T) {
	var calls []string
	d := typedTestDescriptor(&calls)
	wrong := wrapperspb.UInt32(7)
	const key = "test/a"

	err := d.Validate(key, wrong)
	var ive *InvalidValueError
	if !errors.As(err, &ive) || !errors.Is(err, ErrInvalidValueType) {
		t.Fatalf("Validate(wrong type) = %v, want an *InvalidValueError wrapping ErrInvalidValueType", err)
	}
	for _, want := range []string{key, "test-typed", "*wrapperspb.UInt32Value", "*wrapperspb.StringValue"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not name %q", err, want)
		}
	}
	if _, err := d.Create(key, wrong); !errors.Is(err, ErrInvalidValueType) {
		t.Errorf("Create(wrong type) = %v", err)
	} else if d.IsRetriableFailure(err) {
		t.Errorf("wrong-type error %v is retriable", err)
	}
	if err := d.Delete(key, wrong, nil); !errors.Is(err, ErrInvalidValueType) {
		t.Errorf("Delete(wrong type) = %v", err)
	}
	if _, err := d.Update(key, wrapperspb.String("x"), wrong, nil); !errors.Is(err, ErrInvalidValueType) {
		t.Errorf("Update(wrong type) = %v", err)
	}
	if _, err := d.UpdateAsync(key, wrapperspb.String("x"), wrong, nil)(); !errors.Is(err, ErrInvalidValueType) {
		t.Errorf("UpdateAsync(wrong type) = %v", err)
	}
	if md, err := d.UpdateAsync(key, wrapperspb.String("x"), wrapperspb.String("y"), "not *testMeta")(); !errors.Is(err, ErrInvalidValueType) ||
		md != "not *testMeta" {
		t.Errorf("UpdateAsync(wrong metadata) = %v, %v; want the old metadata and the error", md, err)
	}
	if err := d.Delete(key, wrapperspb.String("x"), "not *testMeta"); !errors.Is(err, ErrInvalidValueType) || !strings.Contains(err.Error(), "metadata") {
		t.Errorf("Delete(wrong metadata) = %v", err)
	}
	if err := d.DeleteAsync(key, wrong, nil)(); !errors.Is(err, ErrInvalidValueType) {
		t.Errorf("DeleteAsync(wrong type) = %v", err)
	}
	if err := d.DeleteAsync(key, wrapperspb.String("x"), "not *testMeta")(); !errors.Is(err, ErrInvalidValueType) || !strings.Contains(err.Error(), "metadata") {
		t.Errorf("DeleteAsync(wrong metadata) = %v", err)
	}
	if deps := d.Dependencies(key, wrong); deps != nil {
		t.Errorf("Dependencies(wrong type) = %v", deps)
	}
	if d.ValueComparator(key, wrong, wrapperspb.String("7")) {
		t.Error("values of different types compared equal")
	}
	if len(calls) != 0 {
		t.Errorf("typed callbacks called with a wrong-typed value: %v", calls)
	}
}

// TestTypedDescriptorPassesTypedValues: values of the right type reach the typed
// callbacks; metadata round-trips; a nil *M comes back as nil Metadata.
func TestTypedDescriptorPassesTypedValues(t *testing.T) {
	var calls []string
	d := typedTestDescriptor(&calls)
	const key = "test/a"
	if err := d.Validate(key, wrapperspb.String("abc")); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	if err := d.Validate(key, wrapperspb.String("")); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("typed Validate not consulted: %v", err)
	}
	md, err := d.Create(key, wrapperspb.String("abc"))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := md.(*testMeta); !ok || m.index != 3 {
		t.Errorf("Create metadata = %#v", md)
	}
	md, err = d.Update(key, wrapperspb.String("abc"), wrapperspb.String("abcd"), md)
	if err != nil || md != nil {
		t.Errorf("Update = %#v, %v; want nil metadata (a nil *testMeta is no metadata)", md, err)
	}
	wait := d.UpdateAsync(key, wrapperspb.String("abcd"), wrapperspb.String("abcde"), &testMeta{index: 4})
	if md, err = wait(); err != nil {
		t.Errorf("UpdateAsync = %v", err)
	} else if m, ok := md.(*testMeta); !ok || m.index != 5 {
		t.Errorf("UpdateAsync metadata = %#v", md)
	}
	if err := d.Delete(key, wrapperspb.String("abcd"), nil); err != nil {
		t.Error(err)
	}
	if err := d.DeleteAsync(key, wrapperspb.String("abcde"), &testMeta{index: 5})(); err != nil {
		t.Errorf("DeleteAsync = %v", err)
	}
	if !d.ValueComparator(key, wrapperspb.String("ABC"), wrapperspb.String("abc")) {
		t.Error("typed comparator not used")
	}
	if deps := d.Dependencies(key, wrapperspb.String("b")); len(deps) != 1 || deps[0].Key != "test/b" {
		t.Errorf("Dependencies = %v", deps)
	}
	if !d.IsRetriableFailure(errors.New("vpp busy")) {
		t.Error("typed IsRetriableFailure not consulted")
	}
	want := []string{"create abc", "update abc->abcd", "start update abcd->abcde", "wait update abcd->abcde", "delete abcd",
		"start delete abcde", "wait delete abcde (metadata 5)"}
	if strings.Join(calls, ";") != strings.Join(want, ";") {
		t.Errorf("calls = %v, want %v", calls, want)
	}
}

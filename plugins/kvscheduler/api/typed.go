package api

import (
	"errors"
	"fmt"
	"reflect"

	"google.golang.org/protobuf/proto"
)

// ErrInvalidValueType is wrapped by the error a typed descriptor (Typed) returns for a
// value or metadata of another type than the one it was written for. Such an error is
// never retriable: trying again cannot change the type.
var ErrInvalidValueType = errors.New("value of unexpected type")

// TypedDescriptor is a KVDescriptor whose callbacks take values of one concrete type V
// (a pointer to a generated protobuf message) and metadata of type M. Use M =
// Metadata for a descriptor without metadata. The fields have the meaning of the
// KVDescriptor fields of the same name; Typed turns it into a KVDescriptor.
//
// Retrieve stays untyped: it builds the KVWithMetadata values the scheduler compares
// with what it holds, and the correlate list only helps to name them.
type TypedDescriptor[V proto.Message, M any] struct {
	// Name is KVDescriptor.Name.
	Name string
	// KeySelector is KVDescriptor.KeySelector.
	KeySelector func(key string) bool
	// KeyLabel is KVDescriptor.KeyLabel.
	KeyLabel func(key string) string
	// ValueComparator is KVDescriptor.ValueComparator for two values of type V.
	ValueComparator func(key string, oldValue, newValue V) bool
	// NBKeyPrefix is KVDescriptor.NBKeyPrefix.
	NBKeyPrefix string
	// Validate is KVDescriptor.Validate for a value of type V. The adapter rejects a
	// value of another type before calling it (and even when it is nil).
	Validate func(key string, value V) error
	// Create is KVDescriptor.Create.
	Create func(key string, value V) (M, error)
	// CreateAsync is KVDescriptor.CreateAsync.
	CreateAsync func(key string, value V) (wait func() (M, error))
	// Delete is KVDescriptor.Delete.
	Delete func(key string, value V, metadata M) error
	// DeleteAsync is KVDescriptor.DeleteAsync.
	DeleteAsync func(key string, value V, metadata M) (wait func() error)
	// Update is KVDescriptor.Update.
	Update func(key string, oldValue, newValue V, oldMetadata M) (M, error)
	// UpdateAsync is KVDescriptor.UpdateAsync.
	UpdateAsync func(key string, oldValue, newValue V, oldMetadata M) (wait func() (M, error))
	// UpdateWithRecreate is KVDescriptor.UpdateWithRecreate.
	UpdateWithRecreate func(key string, oldValue, newValue V, metadata M) bool
	// Retrieve is KVDescriptor.Retrieve (untyped, see above).
	Retrieve func(correlate []KVWithMetadata) ([]KVWithMetadata, error)
	// IsRetriableFailure is KVDescriptor.IsRetriableFailure; the adapter answers
	// false for ErrInvalidValueType before asking it.
	IsRetriableFailure func(err error) bool
	// DerivedValues is KVDescriptor.DerivedValues.
	DerivedValues func(key string, value V) []KeyValuePair
	// Dependencies is KVDescriptor.Dependencies.
	Dependencies func(key string, value V) []Dependency
	// RetrieveDependencies is KVDescriptor.RetrieveDependencies.
	RetrieveDependencies []string
	// WithMetadata is KVDescriptor.WithMetadata.
	WithMetadata bool
}

// Typed turns a typed descriptor into the KVDescriptor the scheduler registers.
//
// Every callback converts its arguments first. A value of another type than V (or
// metadata of another type than M) is an error naming the key, the descriptor, the
// expected and the received type, wrapping ErrInvalidValueType:
//   - Validate (always installed, even when d.Validate is nil) returns it as an
//     *InvalidValueError, so the scheduler marks the value INVALID and never calls
//     Create for it;
//   - Create, Update and Delete (and their asynchronous forms, from the wait function)
//     return it (not retriable);
//   - the pure callbacks that return no error are defensive only: ValueComparator
//     falls back to proto.Equal, UpdateWithRecreate answers true (the Delete or
//     Create then reports the error), DerivedValues and Dependencies return nil.
//
// A nil value or nil metadata converts to the zero V or M (a typed nil message,
// whose getters return the defaults), as the scheduler passes nil for "none".
//
// Cost: one type assertion per argument and a closure call per callback.
func Typed[V proto.Message, M any](d TypedDescriptor[V, M]) *KVDescriptor {
	name := d.Name
	kd := &KVDescriptor{
		Name:                 d.Name,
		KeySelector:          d.KeySelector,
		KeyLabel:             d.KeyLabel,
		NBKeyPrefix:          d.NBKeyPrefix,
		Retrieve:             d.Retrieve,
		RetrieveDependencies: d.RetrieveDependencies,
		WithMetadata:         d.WithMetadata,
	}
	kd.Validate = func(key string, value proto.Message) error {
		v, err := typedValue[V](name, key, value)
		if err != nil {
			return NewInvalidValueError(err)
		}
		if d.Validate == nil {
			return nil
		}
		return d.Validate(key, v)
	}
	retriable := d.IsRetriableFailure
	kd.IsRetriableFailure = func(err error) bool {
		if errors.Is(err, ErrInvalidValueType) {
			return false
		}
		return retriable == nil || retriable(err)
	}
	if f := d.ValueComparator; f != nil {
		kd.ValueComparator = func(key string, oldValue, newValue proto.Message) bool {
			o, err1 := typedValue[V](name, key, oldValue)
			n, err2 := typedValue[V](name, key, newValue)
			if err1 != nil || err2 != nil {
				return proto.Equal(oldValue, newValue)
			}
			return f(key, o, n)
		}
	}
	if f := d.Create; f != nil {
		kd.Create = func(key string, value proto.Message) (Metadata, error) {
			v, err := typedValue[V](name, key, value)
			if err != nil {
				return nil, err
			}
			return untypedMetadata(f(key, v))
		}
	}
	if f := d.CreateAsync; f != nil {
		kd.CreateAsync = func(key string, value proto.Message) func() (Metadata, error) {
			v, err := typedValue[V](name, key, value)
			if err != nil {
				return func() (Metadata, error) { return nil, err }
			}
			wait := f(key, v)
			return func() (Metadata, error) { return untypedMetadata(wait()) }
		}
	}
	if f := d.Delete; f != nil {
		kd.Delete = func(key string, value proto.Message, metadata Metadata) error {
			v, m, err := typedValueAndMetadata[V, M](name, key, value, metadata)
			if err != nil {
				return err
			}
			return f(key, v, m)
		}
	}
	if f := d.DeleteAsync; f != nil {
		kd.DeleteAsync = func(key string, value proto.Message, metadata Metadata) func() error {
			v, m, err := typedValueAndMetadata[V, M](name, key, value, metadata)
			if err != nil {
				return func() error { return err }
			}
			return f(key, v, m)
		}
	}
	if f := d.Update; f != nil {
		kd.Update = func(key string, oldValue, newValue proto.Message, oldMetadata Metadata) (Metadata, error) {
			o, err := typedValue[V](name, key, oldValue)
			if err != nil {
				return oldMetadata, err
			}
			n, err := typedValue[V](name, key, newValue)
			if err != nil {
				return oldMetadata, err
			}
			m, err := typedMetadata[M](name, key, oldMetadata)
			if err != nil {
				return oldMetadata, err
			}
			return untypedMetadata(f(key, o, n, m))
		}
	}
	if f := d.UpdateAsync; f != nil {
		kd.UpdateAsync = func(key string, oldValue, newValue proto.Message, oldMetadata Metadata) func() (Metadata, error) {
			o, err := typedValue[V](name, key, oldValue)
			if err == nil {
				var n V
				if n, err = typedValue[V](name, key, newValue); err == nil {
					var m M
					if m, err = typedMetadata[M](name, key, oldMetadata); err == nil {
						wait := f(key, o, n, m)
						return func() (Metadata, error) { return untypedMetadata(wait()) }
					}
				}
			}
			return func() (Metadata, error) { return oldMetadata, err }
		}
	}
	if f := d.UpdateWithRecreate; f != nil {
		kd.UpdateWithRecreate = func(key string, oldValue, newValue proto.Message, metadata Metadata) bool {
			o, err1 := typedValue[V](name, key, oldValue)
			n, err2 := typedValue[V](name, key, newValue)
			m, err3 := typedMetadata[M](name, key, metadata)
			if err1 != nil || err2 != nil || err3 != nil {
				return true
			}
			return f(key, o, n, m)
		}
	}
	if f := d.DerivedValues; f != nil {
		kd.DerivedValues = func(key string, value proto.Message) []KeyValuePair {
			v, err := typedValue[V](name, key, value)
			if err != nil {
				return nil
			}
			return f(key, v)
		}
	}
	if f := d.Dependencies; f != nil {
		kd.Dependencies = func(key string, value proto.Message) []Dependency {
			v, err := typedValue[V](name, key, value)
			if err != nil {
				return nil
			}
			return f(key, v)
		}
	}
	return kd
}

// typedValue converts value to V; nil becomes the zero V.
func typedValue[V proto.Message](descriptor, key string, value proto.Message) (V, error) {
	var zero V
	if value == nil {
		return zero, nil
	}
	v, ok := value.(V)
	if !ok {
		return zero, fmt.Errorf("descriptor %s, key %s: %w: got %T, want %T",
			descriptor, key, ErrInvalidValueType, value, zero)
	}
	return v, nil
}

// typedValueAndMetadata converts the arguments of a Delete.
func typedValueAndMetadata[V proto.Message, M any](descriptor, key string, value proto.Message, metadata Metadata) (V, M, error) {
	var m M
	v, err := typedValue[V](descriptor, key, value)
	if err == nil {
		m, err = typedMetadata[M](descriptor, key, metadata)
	}
	return v, m, err
}

// typedMetadata converts metadata to M; nil becomes the zero M.
func typedMetadata[M any](descriptor, key string, metadata Metadata) (M, error) {
	var zero M
	if metadata == nil {
		return zero, nil
	}
	m, ok := metadata.(M)
	if !ok {
		return zero, fmt.Errorf("descriptor %s, key %s: metadata: %w: got %T, want %T",
			descriptor, key, ErrInvalidValueType, metadata, zero)
	}
	return m, nil
}

// untypedMetadata returns m as Metadata, with a nil pointer (or other nil) of type
// M turned into a nil interface, so the scheduler's "no metadata" stays nil.
func untypedMetadata[M any](m M, err error) (Metadata, error) {
	var md Metadata = m
	if isNil(md) {
		return nil, err
	}
	return md, err
}

// isNil tells whether md holds nil or a nil pointer, map, slice, func or channel.
func isNil(md Metadata) bool {
	if md == nil {
		return true
	}
	switch v := reflect.ValueOf(md); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

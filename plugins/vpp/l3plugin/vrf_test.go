package l3plugin

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

func TestVrfTableCreateRetrieveDelete(t *testing.T) {
	e := newEnv(t)
	d := NewVrfTableDescriptor(e.deps())
	values := map[string]proto.Message{
		l3.VrfTableKey(1, l3.VrfTable_IPV4): &l3.VrfTable{Id: 1, Label: "mainVRF"},
		l3.VrfTableKey(2, l3.VrfTable_IPV4): &l3.VrfTable{Id: 2, Label: "podVRF"},
		l3.VrfTableKey(2, l3.VrfTable_IPV6): &l3.VrfTable{Id: 2, Protocol: l3.VrfTable_IPV6, Label: "podVRF-IPv6"},
		l3.VrfTableKey(0, l3.VrfTable_IPV4): &l3.VrfTable{Id: 0, Label: "default"},
	}
	e.sim.ResetMessageCounts()
	create(t, d, values)
	if n := e.sim.MessageCount("ip_table_add_del"); n != 3 {
		t.Errorf("ip_table_add_del sent %d times, want 3 (table 0 is never created)", n)
	}
	names := map[string]string{}
	for _, tb := range e.sim.Tables() {
		k := l3.VrfTableKey(tb.ID, l3.VrfTable_IPV4)
		if tb.IPv6 {
			k = l3.VrfTableKey(tb.ID, l3.VrfTable_IPV6)
		}
		names[k] = tb.Name
	}
	for k, v := range values {
		if id := v.(*l3.VrfTable).GetId(); id != 0 && names[k] != v.(*l3.VrfTable).GetLabel() {
			t.Errorf("table %s: VPP name %q, want %q", k, names[k], v.(*l3.VrfTable).GetLabel())
		}
	}

	// a restarted agent reads back exactly what NB asks for
	expectRetrieved(t, NewVrfTableDescriptor(e.freshDeps()), values)

	// without NB, VPP's names are reported and table 0 is not
	got := retrieved(t, NewVrfTableDescriptor(e.freshDeps()), nil)
	if len(got) != 3 || !proto.Equal(got[l3.VrfTableKey(2, l3.VrfTable_IPV6)], values[l3.VrfTableKey(2, l3.VrfTable_IPV6)]) {
		t.Errorf("retrieve without NB: %v", got)
	}

	// label changes are not operations
	if !d.ValueComparator("", &l3.VrfTable{Id: 1, Label: "a"}, &l3.VrfTable{Id: 1, Label: "b"}) {
		t.Error("label change compared as different")
	}

	for _, k := range sortedKeys(values) {
		if err := d.Delete(k, values[k], nil); err != nil {
			t.Fatalf("delete %s: %v", k, err)
		}
	}
	for _, tb := range e.sim.Tables() {
		if tb.ID != 0 {
			t.Errorf("table %d (ipv6=%v) left after delete", tb.ID, tb.IPv6)
		}
	}
}

func TestVrfTableValidate(t *testing.T) {
	long := make([]byte, 64)
	for i := range long {
		long[i] = 'x'
	}
	tests := []struct {
		name  string
		key   string
		v     *l3.VrfTable
		field string
	}{
		{"ok", l3.VrfTableKey(5, l3.VrfTable_IPV6), &l3.VrfTable{Id: 5, Protocol: l3.VrfTable_IPV6}, ""},
		{"wrong key", l3.VrfTableKey(5, l3.VrfTable_IPV4), &l3.VrfTable{Id: 5, Protocol: l3.VrfTable_IPV6}, "id"},
		{"unknown protocol", "", &l3.VrfTable{Id: 5, Protocol: 7}, "protocol"},
		{"long label", "", &l3.VrfTable{Id: 5, Label: string(long)}, "label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateVrfTable(tt.key, tt.v)
			checkInvalid(t, err, tt.field)
		})
	}
}

// checkInvalid checks that err is nil (field "") or an InvalidValueError
// naming field.
func checkInvalid(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Errorf("unexpected error: %v", err)
		}
		return
	}
	var inv *kvapi.InvalidValueError
	if !errors.As(err, &inv) {
		t.Fatalf("error %v is not an InvalidValueError", err)
	}
	for _, f := range inv.InvalidFields {
		if f == field {
			return
		}
	}
	t.Errorf("error %v does not name field %s", err, field)
}

func TestVrfTableVPPError(t *testing.T) {
	e := newEnv(t)
	d := NewVrfTableDescriptor(e.deps())
	if err := e.sim.FailMessage("ip_table_add_del", -1, 1); err != nil {
		t.Fatal(err)
	}
	_, err := d.Create(l3.VrfTableKey(3, l3.VrfTable_IPV4), &l3.VrfTable{Id: 3})
	if err == nil || !vppbase.IsRetval(err, -1) {
		t.Fatalf("create error %v, want VPP error -1", err)
	}
	if !d.IsRetriableFailure(err) {
		t.Error("VPP error not retriable")
	}
}

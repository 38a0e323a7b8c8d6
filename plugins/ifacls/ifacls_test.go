package ifacls

import (
	"testing"

	"google.golang.org/protobuf/proto"

	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
)

// txn records what is staged (nil: a delete).
type txn map[string]proto.Message

func (t txn) Put(k string, v proto.Message) { t[k] = v }
func (t txn) Get(k string) proto.Message    { return t[k] }
func (t txn) Delete(k string)               { t[k] = nil }

func lists(in ...string) *vpp_acl.InterfaceACLs {
	return &vpp_acl.InterfaceACLs{Interface: "GbE", InputAcls: in}
}

func TestATailClosesTheListOnlyWhenNoLaterOwnerFollows(t *testing.T) {
	l := NewAgentLists()
	key := vpp_acl.InterfaceKey("GbE")
	steps := []struct {
		name  string
		owner string
		part  Part
		want  proto.Message // nil: deleted
	}{
		{"firewall alone", ServiceOwner, Part{Input: []string{"fw"}, InputTail: "rest"}, lists("fw", "rest")},
		{"policy follows", PolicyOwner, Part{Input: []string{"reflect"}, Output: []string{"global"}},
			&vpp_acl.InterfaceACLs{Interface: "GbE", InputAcls: []string{"fw", "reflect"}, OutputAcls: []string{"global"}}},
		{"policy keeps only its output", PolicyOwner, Part{Output: []string{"global"}},
			&vpp_acl.InterfaceACLs{Interface: "GbE", InputAcls: []string{"fw", "rest"}, OutputAcls: []string{"global"}}},
		{"firewall goes", ServiceOwner, Part{}, &vpp_acl.InterfaceACLs{Interface: "GbE", OutputAcls: []string{"global"}}},
		{"policy goes", PolicyOwner, Part{}, nil},
	}
	for _, s := range steps {
		tx := txn{}
		l.Set(tx, s.owner, "GbE", s.part)
		got, staged := tx[key]
		if !staged || !proto.Equal(got, s.want) {
			t.Fatalf("%s: staged %v (%v), want %v", s.name, got, staged, s.want)
		}
	}
	tx := txn{}
	l.Set(tx, PolicyOwner, "GbE", Part{})
	if len(tx) != 0 {
		t.Errorf("an unchanged part staged %v", tx)
	}
}

func TestResyncEmptiesAListAnEarlierOwnerStaged(t *testing.T) {
	l := NewAgentLists()
	l.Set(txn{}, PolicyOwner, "GbE", Part{Input: []string{"reflect"}})
	l.Set(txn{}, ServiceOwner, "GbE", Part{Input: []string{"fw"}, InputTail: "rest"})
	key := vpp_acl.InterfaceKey("GbE")

	// A resync in which the firewall loses its ranges (it resyncs first, with the
	// policy's old part) and the policy its input too.
	tx := txn{}
	l.Resync(tx, ServiceOwner, nil)
	if !proto.Equal(tx[key], lists("reflect")) {
		t.Fatalf("after the firewall's resync: %v", tx[key])
	}
	l.Resync(tx, PolicyOwner, nil)
	if !proto.Equal(tx[key], &vpp_acl.InterfaceACLs{Interface: "GbE"}) {
		t.Fatalf("after the policy's resync: %v, want empty lists", tx[key])
	}

	// The next resync stages nothing for the interface (so it is removed).
	tx = txn{}
	l.Resync(tx, ServiceOwner, nil)
	l.Resync(tx, PolicyOwner, nil)
	if len(tx) != 0 {
		t.Errorf("second resync staged %v", tx)
	}
}

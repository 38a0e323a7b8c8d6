package vpp_acl

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/contiv-vpp/contiv-vpp/api/models/internal/keyutil"
)

func TestKeyBuildersFollowVppAgentACLScheme(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{ACLKey("contiv-policy-1f2e"), "config/vpp/acls/v2/acl/contiv-policy-1f2e"},
		{ACLKey("contiv-policy-NODE-GLOBAL"), "config/vpp/acls/v2/acl/contiv-policy-NODE-GLOBAL"},
		{InterfaceKey("tap-1234"), "config/vpp/acls/v2/interface/tap-1234"},
		{InterfaceKey("GigabitEthernet0/8/0"), "config/vpp/acls/v2/interface/GigabitEthernet0/8/0"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestParseKeysRoundTripAndRejectOthers(t *testing.T) {
	if n, ok := ParseACLKey(ACLKey("contiv-policy-REFLECTION")); !ok || n != "contiv-policy-REFLECTION" {
		t.Errorf("ParseACLKey round trip = %q, %v", n, ok)
	}
	for _, k := range []string{"", ACLPrefix, ACLPrefix + "a/b", "config/vpp/acls/v1/acl/x", InterfaceKey("x")} {
		if n, ok := ParseACLKey(k); ok {
			t.Errorf("ParseACLKey(%q) = %q, want rejection", k, n)
		}
	}
	if i, ok := ParseInterfaceKey(InterfaceKey("GigabitEthernet0/8/0")); !ok || i != "GigabitEthernet0/8/0" {
		t.Errorf("ParseInterfaceKey round trip = %q, %v", i, ok)
	}
	for _, k := range []string{"", InterfacePrefix, ACLKey("x")} {
		if i, ok := ParseInterfaceKey(k); ok {
			t.Errorf("ParseInterfaceKey(%q) = %q, want rejection", k, i)
		}
	}
}

func TestModelKeyNamesBadValues(t *testing.T) {
	if k, err := ModelKey(&ACL{Name: "a"}); err != nil || k != ACLKey("a") {
		t.Errorf("ModelKey(ACL a) = %q, %v", k, err)
	}
	if k, err := ModelKey(&InterfaceACLs{Interface: "tap1"}); err != nil || k != InterfaceKey("tap1") {
		t.Errorf("ModelKey(InterfaceACLs tap1) = %q, %v", k, err)
	}
	if _, err := ModelKey(&ACL{Name: "a/b"}); !errors.Is(err, keyutil.ErrInvalidValue) {
		t.Errorf("ACL with slash: err = %v, want ErrInvalidValue", err)
	}
	if _, err := ModelKey(&InterfaceACLs{}); !errors.Is(err, keyutil.ErrInvalidValue) {
		t.Errorf("InterfaceACLs without interface: err = %v, want ErrInvalidValue", err)
	}
	if _, err := ModelKey(wrapperspb.String("x")); !errors.Is(err, keyutil.ErrUnknownModel) {
		t.Errorf("foreign message: err = %v, want ErrUnknownModel", err)
	}
}

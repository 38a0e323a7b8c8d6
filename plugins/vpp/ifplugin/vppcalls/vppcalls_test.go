package vppcalls

import (
	"net/netip"
	"testing"
)

func TestAddressConversionsRoundTrip(t *testing.T) {
	for _, s := range []string{"10.1.1.2", "fd00::1", "0.0.0.0"} {
		a := netip.MustParseAddr(s)
		back, ok := AddrFromAPI(AddrToAPI(a))
		if !ok || back != a {
			t.Errorf("%s -> %v (%v)", s, back, ok)
		}
	}
	for _, s := range []string{"10.1.1.2/24", "fd00::1/64"} {
		p := netip.MustParsePrefix(s)
		back, ok := prefixFromAPI(prefixToAPI(p))
		if !ok || back != p {
			t.Errorf("%s -> %v (%v)", s, back, ok)
		}
	}
}

func TestMessagesAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Messages() {
		id := m.GetMessageName() + "_" + m.GetCrcString()
		if seen[id] {
			t.Errorf("message %s listed twice", id)
		}
		seen[id] = true
	}
	if len(seen) == 0 {
		t.Error("no messages registered")
	}
}

package vpp_cnat

import (
	"net/netip"
	"testing"
)

func TestIdentityIsTheSameForEverySpellingAndOrdersByAddressPortProtocol(t *testing.T) {
	tr := func(vip string, port uint32, p Protocol) *Translation {
		return &Translation{VipAddress: vip, VipPort: port, Protocol: p}
	}
	if IdentityOf(tr("10.96.0.10", 80, Protocol_TCP)) != IdentityOf(tr("::ffff:10.96.0.10", 80, Protocol_TCP)) ||
		IdentityOf(tr("fd00::a", 53, Protocol_UDP)) != IdentityOf(tr("FD00:0::A", 53, Protocol_UDP)) {
		t.Error("two spellings of one address make two identities")
	}
	id := IdentityOf(tr("10.96.0.10", 80, Protocol_UDP))
	if id.Addr() != netip.MustParseAddr("10.96.0.10") || id.Port() != 80 || id.Protocol() != Protocol_UDP {
		t.Errorf("identity reads back as %s %d %s", id.Addr(), id.Port(), id.Protocol())
	}
	ordered := []Identity{
		IdentityOf(tr("10.96.0.9", 443, Protocol_UDP)),
		IdentityOf(tr("10.96.0.10", 80, Protocol_TCP)),
		IdentityOf(tr("10.96.0.10", 80, Protocol_UDP)),
		IdentityOf(tr("10.96.0.10", 81, Protocol_TCP)),
		IdentityOf(tr("fd00::1", 1, Protocol_TCP)),
	}
	for i := 1; i < len(ordered); i++ {
		if ordered[i-1].Compare(ordered[i]) >= 0 || ordered[i].Compare(ordered[i-1]) <= 0 {
			t.Errorf("%d and %d out of order", i-1, i)
		}
	}
}

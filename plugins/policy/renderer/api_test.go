package renderer

import (
	"math/rand"
	"net/netip"
	"slices"
	"testing"
)

func pfx(s string) netip.Prefix {
	if s == "" {
		return netip.Prefix{}
	}
	return netip.MustParsePrefix(s)
}

// TestCompareIsATotalOrderPuttingSubsetsFirst checks antisymmetry,
// transitivity (through sorting shuffles) and the subset property on rules
// of every kind.
func TestCompareIsATotalOrderPuttingSubsetsFirst(t *testing.T) {
	rules := []ContivRule{
		{Action: ActionPermit, SrcNetwork: pfx("10.1.1.2/32"), Protocol: TCP, DestPortFirst: 80, DestPortLast: 80},
		{Action: ActionPermit, SrcNetwork: pfx("10.1.1.2/32"), Protocol: TCP, DestPortFirst: 80, DestPortLast: 90},
		{Action: ActionPermit, SrcNetwork: pfx("10.1.1.2/32"), Protocol: TCP},
		{Action: ActionPermit, SrcNetwork: pfx("10.1.1.2/32"), Protocol: UDP, DestPortFirst: 53, DestPortLast: 53},
		{Action: ActionDeny, SrcNetwork: pfx("10.1.1.2/32"), Protocol: ANY},
		{Action: ActionPermit, SrcNetwork: pfx("10.1.1.2/32"), Protocol: ANY},
		{Action: ActionPermit, SrcNetwork: pfx("10.1.0.0/16"), DestNetwork: pfx("10.2.0.0/16"), Protocol: ANY},
		{Action: ActionPermit, SrcNetwork: pfx("10.1.0.0/16"), Protocol: TCP, DestPortFirst: 80, DestPortLast: 80},
		{Action: ActionPermit, Protocol: TCP, DestPortFirst: 80, DestPortLast: 80},
		{Action: ActionPermit, Protocol: SCTP},
		{Action: ActionDeny, Protocol: ANY},
	}
	for i := range rules {
		for j := range rules {
			c, r := Compare(rules[i], rules[j]), Compare(rules[j], rules[i])
			if (i == j) != (c == 0) || c != -r {
				t.Errorf("Compare(%v, %v) = %d, reverse %d", rules[i], rules[j], c, r)
			}
		}
	}
	want := slices.Clone(rules)
	rnd := rand.New(rand.NewSource(1))
	for n := 0; n < 50; n++ {
		got := slices.Clone(rules)
		rnd.Shuffle(len(got), func(a, b int) { got[a], got[b] = got[b], got[a] })
		slices.SortFunc(got, Compare)
		if !slices.Equal(got, want) {
			t.Fatalf("sorted order depends on the input order:\n got %v\nwant %v", got, want)
		}
	}
}

func TestRuleStringNamesEveryPart(t *testing.T) {
	for _, tt := range []struct {
		r    ContivRule
		want string
	}{
		{ContivRule{Action: ActionPermit, SrcNetwork: pfx("10.1.1.2/32"), Protocol: TCP, DestPortFirst: 80, DestPortLast: 81}, "PERMIT 10.1.1.2/32 -> any TCP:80-81"},
		{ContivRule{Action: ActionPermit, DestNetwork: pfx("8.8.8.8/32"), Protocol: UDP, DestPortFirst: 53, DestPortLast: 53}, "PERMIT any -> 8.8.8.8/32 UDP:53"},
		{ContivRule{Action: ActionDeny, Protocol: ANY}, "DENY any -> any ANY"},
		{ContivRule{Action: ActionPermit, Protocol: SCTP}, "PERMIT any -> any SCTP"},
	} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestJoinOwnersIsASortedUnion(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{"", "", ""},
		{"x/a", "", "x/a"},
		{"", "x/a", "x/a"},
		{"x/a", "x/a", "x/a"},
		{"x/b", "x/a", "x/a,x/b"},
		{"x/a,y/c", "x/b,y/c", "x/a,x/b,y/c"},
	} {
		if got := JoinOwners(c.a, c.b); got != c.want {
			t.Errorf("JoinOwners(%q, %q) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

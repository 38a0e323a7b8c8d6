package cache

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer"
)

// The node of these tests: pods in 10.1.1.0/24, remote pods in 10.1.2.0/24,
// services in 10.96.0.0/12, node IP 192.168.16.1 on GbE (SNAT of traffic
// leaving the cluster), VXLAN towards the other nodes.
var (
	conf = Config{
		ClusterNetworks: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("10.96.0.0/12")},
		NodeInterfaces:  []string{"tap-vpp2", "GbE", "vxlanBVI"},
	}
	nodeIP = netip.MustParseAddr("192.168.16.1")
)

func a(s string) netip.Addr { return netip.MustParseAddr(s) }
func p(s string) netip.Prefix {
	if s == "" {
		return netip.Prefix{}
	}
	return netip.MustParsePrefix(s)
}

func permit(src, dst string, proto renderer.Protocol, port uint16) renderer.ContivRule {
	return renderer.ContivRule{Action: renderer.ActionPermit, SrcNetwork: p(src), DestNetwork: p(dst), Protocol: proto, DestPortFirst: port, DestPortLast: port}
}

var denyAll = renderer.ContivRule{Action: renderer.ActionDeny, Protocol: renderer.ANY}

func podCfg(name, ip string, in, eg []renderer.ContivRule) renderer.PodConfig {
	return renderer.PodConfig{ID: podmodel.ID{Namespace: "default", Name: name}, IP: a(ip), Interface: "tap-" + name, PodIngress: in, PodEgress: eg}
}

// engine replays connections through the tables bound in the cache, like
// VPP's ACL plugin: first match, deny at the end of a non-empty table,
// sessions from reflective PERMITs that let the reverse flow pass the same
// interface.
type engine struct {
	c        *Cache
	sessions map[string]bool
}

type pkt struct {
	src, dst netip.Addr
	proto    renderer.Protocol
	sport    uint16
	dport    uint16
}

func (e *engine) pass(iface string, input bool, k pkt) bool {
	key := fmt.Sprintf("%s/%v/%v", iface, input, k)
	if e.sessions[key] {
		return true
	}
	b := e.c.ifaces[iface]
	id := b.Output
	if input {
		id = b.Input
	}
	if id == "" {
		return true
	}
	t := e.c.tables[id]
	for _, r := range t.Rules {
		if r.SrcNetwork.IsValid() && !r.SrcNetwork.Contains(k.src) || r.DestNetwork.IsValid() && !r.DestNetwork.Contains(k.dst) {
			continue
		}
		if r.Protocol != renderer.ANY && (r.Protocol != k.proto || !r.AnyPort() && (k.dport < r.DestPortFirst || k.dport > r.DestPortLast)) {
			continue
		}
		if r.Action == renderer.ActionDeny {
			return false
		}
		if t.Reflective() {
			rev := pkt{src: k.dst, dst: k.src, proto: k.proto, sport: k.dport, dport: k.sport}
			e.sessions[fmt.Sprintf("%s/%v/%v", iface, !input, rev)] = true
		}
		return true
	}
	return false
}

type hop struct {
	iface string
	input bool
	// snat rewrites the source to the node IP after this hop (output NAT
	// runs before the output ACL: the hop itself sees the node IP).
	snat bool
}

// connect sends a SYN from src to dst:port along the path and the SYN-ACK
// back, and says which was dropped.
func (e *engine) connect(src, dst netip.Addr, proto renderer.Protocol, port uint16, path []hop) string {
	fwd := pkt{src: src, dst: dst, proto: proto, sport: 40000, dport: port}
	for _, h := range path {
		if h.snat {
			fwd.src, fwd.sport = nodeIP, 40000
		}
		if !e.pass(h.iface, h.input, fwd) {
			return "DenySyn"
		}
	}
	rev := pkt{src: fwd.dst, dst: fwd.src, proto: proto, sport: port, dport: fwd.sport}
	for i := len(path) - 1; i >= 0; i-- {
		h := path[i]
		if !e.pass(h.iface, !h.input, rev) {
			return "DenySynAck"
		}
		if h.snat {
			rev.dst = src // out2in after the input ACL
		}
	}
	return "Allow"
}

// paths: local pods have interface tap-<name>.
func podToPod(from, to string) []hop {
	return []hop{{iface: "tap-" + from, input: true}, {iface: "tap-" + to}}
}
func podToRemote(from string) []hop {
	return []hop{{iface: "tap-" + from, input: true}, {iface: "vxlanBVI"}}
}
func remoteToPod(to string) []hop {
	return []hop{{iface: "vxlanBVI", input: true}, {iface: "tap-" + to}}
}
func podToInternet(from string) []hop {
	return []hop{{iface: "tap-" + from, input: true}, {iface: "GbE", snat: true}}
}
func internetToPod(to string) []hop {
	return []hop{{iface: "GbE", input: true}, {iface: "tap-" + to}}
}

type conn struct {
	src, dst string
	proto    renderer.Protocol
	port     uint16
	path     []hop
	want     string
}

func TestTablesEnforcePoliciesOnEveryPath(t *testing.T) {
	podA, podB, podC := "10.1.1.2", "10.1.1.3", "10.1.1.4"
	remote, internet := "10.1.2.2", "8.8.8.8"
	tests := []struct {
		name  string
		pods  []renderer.PodConfig
		conns []conn
	}{
		{name: "no policies: everything allowed, no tables",
			pods: []renderer.PodConfig{podCfg("a", podA, nil, nil), podCfg("b", podB, nil, nil)},
			conns: []conn{{podA, podB, renderer.TCP, 80, podToPod("a", "b"), "Allow"},
				{podA, internet, renderer.TCP, 80, podToInternet("a"), "Allow"}}},
		{name: "ingress from one pod on one port",
			pods: []renderer.PodConfig{
				podCfg("a", podA, []renderer.ContivRule{permit(podB+"/32", "", renderer.TCP, 80), denyAll}, nil),
				podCfg("b", podB, nil, nil), podCfg("c", podC, nil, nil)},
			conns: []conn{{podB, podA, renderer.TCP, 80, podToPod("b", "a"), "Allow"},
				{podB, podA, renderer.TCP, 81, podToPod("b", "a"), "DenySyn"},
				{podC, podA, renderer.TCP, 80, podToPod("c", "a"), "DenySyn"},
				{remote, podA, renderer.TCP, 80, remoteToPod("a"), "DenySyn"},
				// replies to a's own connections pass (REFLECTION on its input)
				{podA, podC, renderer.TCP, 80, podToPod("a", "c"), "Allow"},
				{podA, remote, renderer.UDP, 53, podToRemote("a"), "Allow"},
				{podA, internet, renderer.TCP, 443, podToInternet("a"), "Allow"}}},
		{name: "egress to one local pod only: enforced at the destination and on node outputs",
			pods: []renderer.PodConfig{
				podCfg("a", podA, nil, []renderer.ContivRule{permit("", podB+"/32", renderer.TCP, 80), denyAll}),
				podCfg("b", podB, nil, nil), podCfg("c", podC, nil, nil)},
			conns: []conn{{podA, podB, renderer.TCP, 80, podToPod("a", "b"), "Allow"},
				{podA, podB, renderer.TCP, 81, podToPod("a", "b"), "DenySyn"},
				{podA, podC, renderer.TCP, 80, podToPod("a", "c"), "DenySyn"},
				{podA, remote, renderer.TCP, 80, podToRemote("a"), "DenySyn"},
				{podA, internet, renderer.TCP, 80, podToInternet("a"), "DenySyn"},
				// connections to a still get their replies
				{podC, podA, renderer.TCP, 8080, podToPod("c", "a"), "Allow"},
				{remote, podA, renderer.TCP, 8080, remoteToPod("a"), "Allow"},
				{internet, podA, renderer.TCP, 8080, internetToPod("a"), "Allow"},
				// c is not restricted
				{podC, podB, renderer.TCP, 81, podToPod("c", "b"), "Allow"}}},
		{name: "egress and ingress intersect for local pairs",
			pods: []renderer.PodConfig{
				podCfg("a", podA, nil, []renderer.ContivRule{permit("", podB+"/32", renderer.TCP, 80), permit("", podB+"/32", renderer.TCP, 81), denyAll}),
				podCfg("b", podB, []renderer.ContivRule{permit(podA+"/32", "", renderer.TCP, 81), permit(podA+"/32", "", renderer.TCP, 82), denyAll}, nil)},
			conns: []conn{{podA, podB, renderer.TCP, 80, podToPod("a", "b"), "DenySyn"},
				{podA, podB, renderer.TCP, 81, podToPod("a", "b"), "Allow"},
				{podA, podB, renderer.TCP, 82, podToPod("a", "b"), "DenySyn"}}},
		{name: "egress to the Internet holds despite SNAT on the NIC (VPP 25.10 hazard)",
			pods: []renderer.PodConfig{
				podCfg("a", podA, nil, []renderer.ContivRule{permit("", "8.8.8.8/32", renderer.UDP, 53), denyAll})},
			conns: []conn{{podA, internet, renderer.UDP, 53, podToInternet("a"), "Allow"},
				{podA, internet, renderer.TCP, 443, podToInternet("a"), "DenySyn"},
				{podA, "1.1.1.1", renderer.UDP, 53, podToInternet("a"), "DenySyn"}}},
		{name: "ingress isolation does not block replies to the pod's egress to the Internet",
			pods: []renderer.PodConfig{podCfg("a", podA, []renderer.ContivRule{denyAll}, nil)},
			conns: []conn{{podA, internet, renderer.TCP, 443, podToInternet("a"), "Allow"},
				{internet, podA, renderer.TCP, 80, internetToPod("a"), "DenySyn"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(conf)
			c.Update(tt.pods, true)
			for _, cn := range tt.conns {
				e := &engine{c: c, sessions: map[string]bool{}}
				if got := e.connect(a(cn.src), a(cn.dst), cn.proto, cn.port, cn.path); got != cn.want {
					t.Errorf("%s -> %s %v:%d = %s, want %s\n%s", cn.src, cn.dst, cn.proto, cn.port, got, cn.want, c.Dump())
				}
			}
		})
	}
}

func TestIdenticalTablesAreSharedAndNamesAreStable(t *testing.T) {
	in := []renderer.ContivRule{permit("10.1.1.9/32", "", renderer.TCP, 80), denyAll}
	c := New(conf)
	ch := c.Update([]renderer.PodConfig{podCfg("a", "10.1.1.2", in, nil), podCfg("b", "10.1.1.3", in, nil)}, true)
	bs := c.Bindings()
	if bs["tap-a"] != bs["tap-b"] || bs["tap-a"].Output == "" || bs["tap-a"].Input != ReflectionID {
		t.Errorf("bindings = %v, want one shared LOCAL table and REFLECTION", bs)
	}
	if len(ch.Created) != 2 { // the LOCAL table and REFLECTION
		t.Errorf("created %d tables, want 2:\n%s", len(ch.Created), c.Dump())
	}
	c2 := New(conf)
	c2.Update([]renderer.PodConfig{podCfg("b", "10.1.1.3", in, nil)}, true)
	if c2.Bindings()["tap-b"] != bs["tap-b"] {
		t.Error("table ID depends on something other than the rules")
	}
}

func TestIncrementalUpdatesMatchAResyncAndTouchOnlyWhatChanged(t *testing.T) {
	var pods []renderer.PodConfig
	for i := 0; i < 20; i++ {
		pods = append(pods, podCfg(fmt.Sprint("p", i), fmt.Sprintf("10.1.1.%d", i+2), nil, nil))
	}
	c := New(conf)
	c.Update(pods, true)
	if len(c.Tables()) != 0 {
		t.Fatalf("tables without policies:\n%s", c.Dump())
	}
	// 1. ingress rules for 3 pods: 3 LOCAL tables computed, no global.
	step := func(changed []renderer.PodConfig) Changes {
		for _, ch := range changed {
			for i := range pods {
				if pods[i].ID == ch.ID {
					pods[i] = ch
				}
			}
		}
		ch := c.Update(changed, false)
		full := New(conf)
		full.Update(pods, true)
		if got, want := c.Dump(), full.Dump(); got != want {
			t.Fatalf("incremental state differs from a resync:\n got:\n%s\nwant:\n%s", got, want)
		}
		return ch
	}
	in := []renderer.ContivRule{permit("10.1.1.2/32", "", renderer.TCP, 80), denyAll}
	ch := step([]renderer.PodConfig{podCfg("p3", "10.1.1.5", in, nil), podCfg("p4", "10.1.1.6", in, nil), podCfg("p5", "10.1.1.7", in, nil)})
	if st := c.LastStats(); st.LocalTablesComputed != 3 || st.GlobalComputed {
		t.Errorf("stats after ingress change of 3 pods = %+v", st)
	}
	if len(ch.Interfaces) != 3 {
		t.Errorf("interfaces changed = %v, want 3", ch.Interfaces)
	}
	// 2. egress rules for p0 (allowed to p3 only): GLOBAL, and every other pod's table gets p0's part.
	eg := []renderer.ContivRule{permit("", "10.1.1.5/32", renderer.TCP, 80), denyAll}
	step([]renderer.PodConfig{podCfg("p0", "10.1.1.2", nil, eg)})
	if st := c.LastStats(); !st.GlobalComputed || st.LocalTablesComputed != 20 {
		t.Errorf("stats after egress change = %+v", st)
	}
	// 3. p3's ingress changes: only its table.
	step([]renderer.PodConfig{podCfg("p3", "10.1.1.5", []renderer.ContivRule{denyAll}, nil)})
	if st := c.LastStats(); st.LocalTablesComputed != 1 || st.GlobalComputed {
		t.Errorf("stats after one ingress change = %+v", st)
	}
	// 4. p0 removed: its parts and GLOBAL go away.
	gone := podCfg("p0", "10.1.1.2", nil, nil)
	gone.Removed = true
	ch = step([]renderer.PodConfig{gone})
	pods = pods[1:]
	if c.Table(GlobalID) != nil {
		t.Error("GLOBAL still in use")
	}
	var deleted []string
	for _, tb := range ch.Deleted {
		deleted = append(deleted, tb.Kind.String())
	}
	if !strings.Contains(fmt.Sprint(deleted), "GLOBAL") {
		t.Errorf("deleted tables = %v, want GLOBAL among them", deleted)
	}
}

func TestPortSetIntersection(t *testing.T) {
	rules := []renderer.ContivRule{permit("", "", renderer.TCP, 80), {Action: renderer.ActionPermit, Protocol: renderer.TCP, DestPortFirst: 79, DestPortLast: 90},
		{Action: renderer.ActionPermit, Protocol: renderer.UDP}, denyAll}
	s := portsAllowed(rules, a("1.1.1.1"), a("2.2.2.2"))
	if fmt.Sprint(s.ranges) != "[[{79 90}] [{0 65535}] []]" || s.all {
		t.Errorf("portsAllowed = %+v", s)
	}
	o := portsAllowed([]renderer.ContivRule{{Action: renderer.ActionPermit, Protocol: renderer.TCP, DestPortFirst: 85, DestPortLast: 100}, permit("", "", renderer.SCTP, 1), denyAll}, a("1.1.1.1"), a("2.2.2.2"))
	if got := s.intersect(o); fmt.Sprint(got.ranges) != "[[{85 90}] [] []]" {
		t.Errorf("intersect = %+v", got)
	}
	if got := s.intersect(portSet{all: true}); fmt.Sprint(got.ranges) != fmt.Sprint(s.ranges) {
		t.Errorf("intersect with all = %+v", got)
	}
}

// TestWindowKeepsEveryRuleThatCanMatch: on sorted lists with host, wider,
// IPv6 and "any" prefixes, the rules window keeps give the same verdicts as
// the whole list, for addresses inside and outside the lists.
func TestWindowKeepsEveryRuleThatCanMatch(t *testing.T) {
	prefixes := []string{"", "0.0.0.0/0", "10.0.0.0/8", "10.1.1.0/24", "10.1.1.2/32", "10.1.1.3/32", "10.1.1.9/32",
		"10.1.2.0/23", "10.1.1.3/31", "fd00::/8", "fd00::3/128", "::/0", "10.1.1.0/32"}
	addrs := []string{"10.1.1.2", "10.1.1.3", "10.1.1.4", "10.1.1.9", "10.1.2.7", "192.168.1.1", "fd00::3", "fd00::4", "10.1.1.0"}
	for seed := 0; seed < 200; seed++ {
		var in, eg []renderer.ContivRule
		for i := 0; i < 1+seed%17; i++ {
			pf := prefixes[(seed*7+i*5+i*i)%len(prefixes)]
			proto := renderer.Protocol((seed + i) % 4)
			port := uint16(80 + (seed+3*i)%3)
			in = append(in, permit(pf, "", proto, port))
			eg = append(eg, permit("", pf, proto, port))
		}
		in = append(in, denyAll)
		eg = append(eg, denyAll)
		slices.SortFunc(in, renderer.Compare)
		slices.SortFunc(eg, renderer.Compare)
		d := &pod{}
		d.setConfig(renderer.PodConfig{IP: a("10.1.1.5"), PodIngress: in, PodEgress: eg})
		if !d.inSorted || !d.egSorted {
			t.Fatalf("seed %d: sorted lists not recognized", seed)
		}
		for _, as := range addrs {
			x := a(as)
			host, wide := d.ingressFrom(x)
			if got, want := portsAllowedIn([2][]renderer.ContivRule{host, wide}, false, x, d.cfg.IP), portsAllowed(in, x, d.cfg.IP); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("seed %d, from %s: window %v, whole list %v\n%v", seed, x, got, want, in)
			}
			host, wide = d.egressTo(x)
			if got, want := portsAllowedIn([2][]renderer.ContivRule{host, wide}, false, d.cfg.IP, x), portsAllowed(eg, d.cfg.IP, x); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("seed %d, to %s: window %v, whole list %v\n%v", seed, x, got, want, eg)
			}
			full := &pod{cfg: d.cfg} // unsorted path: the source index
			if got, want := d.admits(x), full.admits(x); got != want {
				t.Errorf("seed %d, from %s: admits %v, source index %v", seed, x, got, want)
			}
		}
	}
}

// TestChurnKeepsTheCacheBoundedByTheLivePods: pods with ever new rules come
// and go (egress towards each other, so the per-pair caches fill), with no
// resync; what the cache holds stays proportional to the live pods.
func TestChurnKeepsTheCacheBoundedByTheLivePods(t *testing.T) {
	c := New(conf)
	c.Update(nil, true)
	const live = 4
	maxPairs, maxParts := 0, 0
	for i := 0; i < 400; i++ {
		ip := fmt.Sprintf("10.1.1.%d", 2+i%250)
		in := []renderer.ContivRule{permit(fmt.Sprintf("10.1.2.%d/32", i%250), "", renderer.TCP, uint16(1000+i)), denyAll}
		eg := []renderer.ContivRule{permit("", "10.1.1.0/24", renderer.TCP, uint16(2000+i)), denyAll}
		change := []renderer.PodConfig{podCfg(fmt.Sprintf("p%d", i), ip, in, eg)}
		if i >= live {
			old := podCfg(fmt.Sprintf("p%d", i-live), "10.1.1.1", nil, nil)
			old.Removed = true
			change = append(change, old)
		}
		c.Update(change, false)
		pairs := 0
		for _, m := range c.egAllowed {
			pairs += len(m)
		}
		parts := 0
		for _, pd := range c.pods {
			parts += len(pd.parts)
		}
		if len(c.pods) > live+1 || len(c.egress) > live+1 || len(c.egAllowed) > live+1 || pairs > (live+1)*(live+1) ||
			parts > (live+1)*(live+1) || len(c.tables) > 2*(live+1)+2 || len(c.refs) > len(c.tables) || len(c.ifaces) > live+1+len(conf.NodeInterfaces) {
			t.Fatalf("step %d: pods %d, egress %d, egAllowed %d (%d pairs), parts %d, tables %d, refs %d, interfaces %d",
				i, len(c.pods), len(c.egress), len(c.egAllowed), pairs, parts, len(c.tables), len(c.refs), len(c.ifaces))
		}
		maxPairs, maxParts = max(maxPairs, pairs), max(maxParts, parts)
	}
	if maxPairs == 0 || maxParts == 0 {
		t.Errorf("the churn never filled the per-pair caches (pairs %d, parts %d): the test checks nothing", maxPairs, maxParts)
	}
}

package tracer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeNames is what the agents of the recording lab knew (test/cluster
// TestTraceExplainsWhyAPodCannotReachAnother with CONTIV_TRACE_RECORD set: node1
// runs trace/client, node2 trace/web and trace/guarded; the Service trace/web has the
// ClusterIP 10.98.218.87 (the Service without endpoints of the no-endpoints
// recording, 10.101.175.34), the NetworkPolicy trace/deny-guarded isolates
// trace/guarded).
type fakeNames struct {
	byIndex map[uint32]string
	vppIdx  map[string]uint32
	pods    map[string]string // logical interface -> pod
	podAt   map[string]string
}

func (f fakeNames) InterfaceByIndex(sw uint32) string { return f.byIndex[sw] }
func (f fakeNames) InterfaceByVPPName(n string) string {
	if i, ok := f.vppIdx[n]; ok {
		return f.byIndex[i]
	}
	return ""
}
func (f fakeNames) PodOfInterface(l string) string { return f.pods[l] }
func (f fakeNames) PodAt(ip string) string         { return f.podAt[ip] }
func (f fakeNames) NodeAt(ip string) string {
	return map[string]string{"192.168.16.1": "node1", "192.168.16.2": "node2"}[ip]
}
func (f fakeNames) ServiceAt(ip string, port uint16, proto string) string {
	if ip == "10.98.218.87" && port == 80 && proto == ProtoTCP {
		return "trace/web"
	}
	return ""
}
func (f fakeNames) RuleOwner(acl string, rule int) (string, bool, bool) {
	if acl == "contiv-policy-fa36c3a8e2abe002" && rule == 4 {
		return "trace/deny-guarded", true, true
	}
	return "", false, false
}

var (
	node1Names = fakeNames{
		byIndex: map[uint32]string{1: "GigabitEthernet0/8/0", 7: "vpp-tap-client"},
		vppIdx:  map[string]uint32{"GigabitEthernet0/8/0": 1, "tap1": 7},
		pods:    map[string]string{"vpp-tap-client": "trace/client"},
		podAt:   map[string]string{"10.1.1.2": "trace/client"},
	}
	node2Names = fakeNames{
		byIndex: map[uint32]string{1: "GigabitEthernet0/8/0", 7: "vpp-tap-web", 8: "vpp-tap-guarded"},
		vppIdx:  map[string]uint32{"GigabitEthernet0/8/0": 1, "tap1": 7, "tap2": 8},
		pods:    map[string]string{"vpp-tap-web": "trace/web", "vpp-tap-guarded": "trace/guarded"},
		podAt:   map[string]string{"10.1.2.2": "trace/web", "10.1.2.3": "trace/guarded"},
	}
)

func recorded(t *testing.T, name string) []Packet {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".trace"))
	if err != nil {
		t.Fatal(err)
	}
	return Parse(string(data))
}

func TestParseSplitsVPPsTraceIntoPacketsAndNodes(t *testing.T) {
	pkts := recorded(t, "dropped-by-vpp-node1")
	if len(pkts) != 1 || pkts[0].Index != 1 {
		t.Fatalf("packets %+v, want packet 1 only", pkts)
	}
	first, last := pkts[0].Lines[0], pkts[0].Lines[len(pkts[0].Lines)-1]
	if first != (Line{Node: "virtio-input", Text: "virtio: hw_if_index 7 len 62"}) ||
		last != (Line{Node: "error-drop", Text: "rx:tap1 ip4-udp-lookup: No listener for dst port"}) {
		t.Errorf("first line %+v, last %+v", first, last)
	}
	if got := Parse("------------------- Start of thread 0 vpp_main -------------------\nNo packets in trace buffer\n"); len(got) != 0 {
		t.Errorf("an empty trace parsed as %+v", got)
	}
}

// TestExplainRecordedTraces explains traces the simulator recorded in the lab, one per
// verdict, in Kubernetes terms.
func TestExplainRecordedTraces(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  string
		names Names
		match Match
		// packet is which of the probe's packets is checked (from 0)
		packet int
		want   Explained // the fields compared (those set)
		hops   []string  // texts the hops must say
		not    []string  // nor these
	}{
		{
			name: "allowed: the Service's NAT mapping and the tunnel, on the client's node", file: "allowed-node1", names: node1Names,
			match: Match{Srcs: []string{"10.1.1.2"}, Dsts: []string{"10.98.218.87"}, Port: 80, Proto: "tcp"},
			want:  Explained{Verdict: Forwarded, Service: "trace/web", Backend: "10.1.2.2:8080", NewDst: "10.1.2.2", ToNode: "node2"},
			hops:  []string{"received on pod trace/client", "NAT: Service trace/web (10.98.218.87:80) -> backend 10.1.2.2:8080", "VXLAN tunnel to node node2 (192.168.16.2)"},
		},
		{
			name: "allowed: delivered to the backend on its node", file: "allowed-node2", names: node2Names,
			match: Match{Srcs: []string{"10.1.1.2"}, Dsts: []string{"10.98.218.87", "10.1.2.2"}},
			want:  Explained{Verdict: Delivered, Pod: "trace/web"},
			hops:  []string{"VXLAN tunnel from node node1 (192.168.16.1)", "delivered to pod trace/web"},
			not:   []string{"for VPP itself"}, // the VXLAN packet's outer header is
		},
		{
			name: "denied by policy: the policy and its rule", file: "denied-by-policy-node2", names: node2Names,
			match: Match{Srcs: []string{"10.1.1.2"}, Dsts: []string{"10.1.2.3"}},
			want: Explained{Verdict: DeniedByPolicy, Policy: "trace/deny-guarded", ACLRule: "ACL contiv-policy-fa36c3a8e2abe002 rule 4",
				DropNode: "acl-plugin-out-ip4-fa"},
			hops: []string{"DENY by NetworkPolicy trace/deny-guarded: ACL contiv-policy-fa36c3a8e2abe002 rule 4, " +
				"in the output ACL of pod trace/guarded (interface vpp-tap-guarded)"},
			not: []string{"delivered"},
		},
		{
			name: "dropped by VPP: the node and the reason; the ICMP error is not the probe", file: "dropped-by-vpp-node1", names: node1Names,
			match: Match{Srcs: []string{"10.1.1.2"}, Dsts: []string{"10.1.1.1"}},
			want:  Explained{Verdict: DroppedByVPP, DropNode: "ip4-udp-lookup", DropReason: "No listener for dst port"},
			hops:  []string{"VPP answers 10.1.1.2 with ICMP port unreachable", "DROP at ip4-udp-lookup: No listener for dst port"},
			not:   []string{"delivered"},
		},
		{
			name: "no endpoints: the Service's reject route, even when VPP rate-limits its ICMP answer", file: "no-endpoints-node1", names: node1Names,
			match: Match{Srcs: []string{"10.1.1.2"}, Dsts: []string{"10.101.175.34"}},
			want:  Explained{Verdict: NoEndpoints, DropNode: "ip4-null"},
			hops:  []string{"reject route 10.101.175.34/32: the Service has no endpoints", "no ICMP answer: VPP's ICMP errors to this source are rate limited"},
		},
		{
			name: "no endpoints: VPP answers ICMP prohibited", file: "no-endpoints-node1", names: node1Names, packet: 1,
			match: Match{Srcs: []string{"10.1.1.2"}, Dsts: []string{"10.101.175.34"}},
			want:  Explained{Verdict: NoEndpoints},
			hops:  []string{"VPP answers 10.1.1.2 with ICMP administratively prohibited"},
			not:   []string{"delivered", "unreachable"},
		},
		{
			name: "no route: the FIB entry that drops it", file: "no-route-node1", names: node1Names,
			match: Match{Srcs: []string{"10.1.1.2"}, Dsts: []string{"240.0.0.1"}},
			want:  Explained{Verdict: NoRoute},
			hops:  []string{"FIB entry 240.0.0.0/4 drops it: no route"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Explain(recorded(t, tc.file), tc.names, tc.match)
			if len(got) <= tc.packet {
				t.Fatalf("%d packets of the probe found, want packet #%d", len(got), tc.packet)
			}
			e := got[tc.packet]
			check := func(field, have, want string) {
				if want != "" && have != want {
					t.Errorf("%s = %q, want %q", field, have, want)
				}
			}
			check("verdict", string(e.Verdict), string(tc.want.Verdict))
			check("service", e.Service, tc.want.Service)
			check("backend", e.Backend, tc.want.Backend)
			check("newDst", e.NewDst, tc.want.NewDst)
			check("toNode", e.ToNode, tc.want.ToNode)
			check("pod", e.Pod, tc.want.Pod)
			check("policy", e.Policy, tc.want.Policy)
			check("aclRule", e.ACLRule, tc.want.ACLRule)
			check("dropNode", e.DropNode, tc.want.DropNode)
			check("dropReason", e.DropReason, tc.want.DropReason)
			var all []string
			for _, h := range e.Hops {
				all = append(all, h.Node+": "+h.What)
			}
			text := strings.Join(all, "\n")
			for _, w := range tc.hops {
				if !strings.Contains(text, w) {
					t.Errorf("the hops do not say %q:\n%s", w, text)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(text, w) {
					t.Errorf("the hops say %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestExplainSkipsPacketsThatAreNotTheProbes(t *testing.T) {
	pkts := recorded(t, "denied-by-policy-node2")
	got := Explain(pkts, node2Names, Match{Srcs: []string{"10.1.1.2"}, Dsts: []string{"10.1.2.3"}})
	if len(got) == 0 || len(got) >= len(pkts) {
		t.Fatalf("%d of %d packets selected; the trace holds IPv6 router solicitations and others", len(got), len(pkts))
	}
	for _, e := range got {
		if e.Src != "10.1.1.2" || e.Dst != "10.1.2.3" {
			t.Errorf("packet %d %s -> %s selected", e.Packet, e.Src, e.Dst)
		}
	}
}

package nodesync

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

func TestNodeMapIsBuiltFromVppNodesAndKubernetesNodes(t *testing.T) {
	tests := []struct {
		name    string
		state   api.KubeStateData
		wantID  uint32
		want    []string // describeNodes lines
		wantLog string   // a warning that must be logged
	}{{
		name:   "this node only",
		state:  kubeState(vppNode(1, thisNode)),
		wantID: 1,
		want:   []string{`node1: ID=1 name=node1 vpp-ips=[] mgmt-ips=[] pod-cidr=""`},
	}, {
		name: "records of both resources are joined by name",
		state: kubeState(
			vppNode(1, thisNode, "192.168.16.1/24"),
			vppNode(2, "node2", "192.168.16.2/24", "fd00::2/64"),
			k8sNode(thisNode, "10.1.1.0/24", "internal:10.20.0.1"),
			k8sNode("node2", "10.1.2.0/24", "hostname:node2", "internal:10.20.0.2", "external:203.0.113.2", "external:10.20.0.2"),
		),
		wantID: 1,
		want: []string{
			`node1: ID=1 name=node1 vpp-ips=[192.168.16.1/24] mgmt-ips=[10.20.0.1] pod-cidr="10.1.1.0/24"`,
			`node2: ID=2 name=node2 vpp-ips=[192.168.16.2/24,fd00::2/64] mgmt-ips=[10.20.0.2,203.0.113.2] pod-cidr="10.1.2.0/24"`,
		},
	}, {
		name:   "a Kubernetes node without an ID is left out",
		state:  kubeState(vppNode(1, thisNode), k8sNode("node3", "", "internal:10.20.0.3")),
		wantID: 1,
		want:   []string{`node1: ID=1 name=node1 vpp-ips=[] mgmt-ips=[] pod-cidr=""`},
	}, {
		name: "the obsolete ip_address is used when ip_addresses is empty",
		state: kubeState(vppNode(1, thisNode), &vppnode.VppNode{Id: 2, Name: "old", IpAddress: "192.168.16.2/24"},
			&vppnode.VppNode{Id: 3, Name: "both", IpAddress: "192.168.16.30/24", IpAddresses: []string{"192.168.16.3/24"}}),
		wantID: 1,
		want: []string{
			`both: ID=3 name=both vpp-ips=[192.168.16.3/24] mgmt-ips=[] pod-cidr=""`,
			`node1: ID=1 name=node1 vpp-ips=[] mgmt-ips=[] pod-cidr=""`,
			`old: ID=2 name=old vpp-ips=[192.168.16.2/24] mgmt-ips=[] pod-cidr=""`,
		},
	}, {
		name:    "bad addresses are skipped",
		state:   kubeState(vppNode(1, thisNode, "bogus", "192.168.16.1"), k8sNode(thisNode, "", "internal:not-an-ip", "external:10.20.0.1")),
		wantID:  1,
		want:    []string{`node1: ID=1 name=node1 vpp-ips=[192.168.16.1/32] mgmt-ips=[10.20.0.1] pod-cidr=""`},
		wantLog: "ignoring a VPP address that is not an IP address",
	}, {
		name:    "a node holding several IDs is known by the lowest",
		state:   kubeState(vppNode(1, thisNode), vppNode(7, "node2", "192.168.16.7/24"), vppNode(4, "node2", "192.168.16.4/24")),
		wantID:  1,
		want:    []string{`node1: ID=1 name=node1 vpp-ips=[] mgmt-ips=[] pod-cidr=""`, `node2: ID=4 name=node2 vpp-ips=[192.168.16.4/24] mgmt-ips=[] pod-cidr=""`},
		wantLog: "node holds several IDs: the lowest is used",
	}, {
		name: "unusable records are ignored",
		state: func() api.KubeStateData {
			ks := kubeState(vppNode(1, thisNode), &vppnode.VppNode{Id: 2})
			ks[vppnode.Keyword]["allocatedIDs/x"] = vppNode(9, "node9")
			ks[vppnode.Keyword][vppnode.Key(3)] = &pod.Pod{Name: "p"}
			ks[node.Keyword]["k8s/node/"] = k8sNode("", "")
			return ks
		}(),
		wantID:  1,
		want:    []string{`node1: ID=1 name=node1 vpp-ips=[] mgmt-ips=[] pod-cidr=""`},
		wantLog: "ignoring a VppNode without a node name",
	}, {
		name:    "the key's ID wins over the value's",
		state:   api.KubeStateData{vppnode.Keyword: {vppnode.Key(5): vppNode(6, thisNode)}},
		wantID:  5,
		want:    []string{`node1: ID=5 name=node1 vpp-ips=[] mgmt-ips=[] pod-cidr=""`},
		wantLog: "VppNode ID differs from its key: the key wins",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, loop, logs := newPlugin(t, thisNode, nil)
			if err := resync(ns, 1, tt.state); err != nil {
				t.Fatalf("Resync: %v", err)
			}
			if got := ns.GetNodeID(); got != tt.wantID {
				t.Errorf("GetNodeID = %d, want %d", got, tt.wantID)
			}
			if got, want := describeNodes(ns.GetAllNodes()), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("nodes:\n%s\nwant:\n%s", got, want)
			}
			if tt.wantLog != "" && !slices.ContainsFunc(logs.AllEntries(), func(e *logrus.Entry) bool { return e.Message == tt.wantLog }) {
				t.Errorf("no log %q", tt.wantLog)
			}
			if evs := loop.take(); len(evs) != 0 {
				t.Errorf("a resync pushed %d events", len(evs))
			}
		})
	}
}

func TestNodeUpdateRules(t *testing.T) {
	// Before every case: this node has ID 1, node2 has ID 2 and a Kubernetes node,
	// node3 has only a Kubernetes node (no ID).
	initial := kubeState(
		vppNode(1, thisNode, "192.168.16.1/24"),
		k8sNode(thisNode, "10.1.1.0/24", "internal:10.20.0.1"),
		vppNode(2, "node2", "192.168.16.2/24"),
		k8sNode("node2", "10.1.2.0/24", "internal:10.20.0.2"),
		k8sNode("node3", "", "internal:10.20.0.3"),
	)
	vppChange := func(id uint32, prev, cur *vppnode.VppNode) *api.KubeStateChange {
		ev := &api.KubeStateChange{Resource: vppnode.Keyword, Key: vppnode.Key(id)}
		if prev != nil {
			ev.PrevValue = prev
		}
		if cur != nil {
			ev.NewValue = cur
		}
		return ev
	}
	nodeChange := func(name string, cur *node.Node) *api.KubeStateChange {
		ev := &api.KubeStateChange{Resource: node.Keyword, Key: node.Key(name), PrevValue: initial[node.Keyword][node.Key(name)]}
		if cur != nil {
			ev.NewValue = cur
		}
		return ev
	}
	tests := []struct {
		name     string
		change   *api.KubeStateChange
		want     []string // describeUpdates
		wantDesc string
		check    func(t *testing.T, upd []*NodeUpdate)
	}{{
		name:     "another node gets an ID",
		change:   vppChange(3, nil, vppNode(3, "node3", "192.168.16.3/24")),
		want:     []string{"node3 -->3"},
		wantDesc: "node node3 (ID 3) added",
		check: func(t *testing.T, upd []*NodeUpdate) {
			if got := upd[0].NewState.String(); got != `ID=3 name=node3 vpp-ips=[192.168.16.3/24] mgmt-ips=[10.20.0.3] pod-cidr=""` {
				t.Errorf("new state %s", got)
			}
		},
	}, {
		name:     "a node unknown so far gets an ID",
		change:   vppChange(4, nil, vppNode(4, "node4")),
		want:     []string{"node4 -->4"},
		wantDesc: "node node4 (ID 4) added",
	}, {
		name:     "another node's VPP IPs change",
		change:   vppChange(2, vppNode(2, "node2", "192.168.16.2/24"), vppNode(2, "node2", "192.168.16.2/24", "fd00::2/64")),
		want:     []string{"node2 2->2"},
		wantDesc: "node node2 (ID 2) updated",
		check: func(t *testing.T, upd []*NodeUpdate) {
			if len(upd[0].PrevState.VppIPAddresses) != 1 || len(upd[0].NewState.VppIPAddresses) != 2 {
				t.Errorf("states %s -> %s", upd[0].PrevState, upd[0].NewState)
			}
		},
	}, {
		name:     "another node's VppNode is deleted",
		change:   vppChange(2, vppNode(2, "node2", "192.168.16.2/24"), nil),
		want:     []string{"node2 2->-"},
		wantDesc: "node node2 (ID 2) removed",
	}, {
		name:   "another node's VppNode is rewritten unchanged",
		change: vppChange(2, vppNode(2, "node2", "192.168.16.2/24"), vppNode(2, "node2", "192.168.16.2/24")),
	}, {
		name:   "another node takes a second, higher ID",
		change: vppChange(9, nil, vppNode(9, "node2")),
	}, {
		name:     "an ID passes from one node to another",
		change:   vppChange(2, vppNode(2, "node2", "192.168.16.2/24"), vppNode(2, "node3")),
		want:     []string{"node2 2->-", "node3 -->2"},
		wantDesc: "node node2 (ID 2) removed; node node3 (ID 2) added",
	}, {
		name:     "another node's management IPs change",
		change:   nodeChange("node2", k8sNode("node2", "10.1.2.0/24", "internal:10.20.0.22")),
		want:     []string{"node2 2->2"},
		wantDesc: "node node2 (ID 2) updated",
	}, {
		name:     "another node's pod CIDR changes",
		change:   nodeChange("node2", k8sNode("node2", "10.1.22.0/24", "internal:10.20.0.2")),
		want:     []string{"node2 2->2"},
		wantDesc: "node node2 (ID 2) updated",
	}, {
		name:   "another node's other addresses change",
		change: nodeChange("node2", k8sNode("node2", "10.1.2.0/24", "internal:10.20.0.2", "hostname:node2")),
	}, {
		name:     "another node's Kubernetes node is deleted",
		change:   nodeChange("node2", nil),
		want:     []string{"node2 2->2"},
		wantDesc: "node node2 (ID 2) updated",
		check: func(t *testing.T, upd []*NodeUpdate) {
			if n := upd[0].NewState; len(n.MgmtIPAddresses) != 0 || n.PodCIDR != "" || len(n.VppIPAddresses) != 1 {
				t.Errorf("new state %s", n)
			}
		},
	}, {
		name:   "a node without an ID changes its management IPs",
		change: nodeChange("node3", k8sNode("node3", "", "internal:10.20.0.33")),
	}, {
		name:   "a node without an ID appears",
		change: nodeChange("node5", k8sNode("node5", "", "internal:10.20.0.5")),
	}, {
		name:   "this node's VPP IPs change",
		change: vppChange(1, vppNode(1, thisNode, "192.168.16.1/24"), vppNode(1, thisNode, "192.168.16.11/24")),
	}, {
		name:   "this node's VppNode is deleted",
		change: vppChange(1, vppNode(1, thisNode, "192.168.16.1/24"), nil),
	}, {
		name:     "this node's management IPs change",
		change:   nodeChange(thisNode, k8sNode(thisNode, "10.1.1.0/24", "internal:10.20.0.1", "external:203.0.113.1")),
		want:     []string{"node1 1->1"},
		wantDesc: "node node1 (ID 1) updated",
	}, {
		name:     "this node's pod CIDR changes",
		change:   nodeChange(thisNode, k8sNode(thisNode, "10.1.11.0/24", "internal:10.20.0.1")),
		want:     []string{"node1 1->1"},
		wantDesc: "node node1 (ID 1) updated",
	}, {
		name:   "this node's other Kubernetes data change",
		change: nodeChange(thisNode, &node.Node{Name: thisNode, Pod_CIDR: "10.1.1.0/24", Provider_ID: "x", Addresses: initial[node.Keyword][node.Key(thisNode)].(*node.Node).Addresses}),
	}, {
		name:   "a key that is not a VppNode key",
		change: &api.KubeStateChange{Resource: vppnode.Keyword, Key: "allocatedIDs/zero", NewValue: vppNode(0, "x")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, loop, _ := newPlugin(t, thisNode, nil)
			if err := resync(ns, 1, initial); err != nil {
				t.Fatal(err)
			}
			if !ns.HandlesEvent(tt.change) {
				t.Fatalf("%s not handled", tt.change)
			}
			desc, err := ns.Update(tt.change, nil)
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
			evs := loop.take()
			if got := describeUpdates(t, evs); !slices.Equal(got, tt.want) {
				t.Errorf("events %q, want %q", got, tt.want)
			}
			if desc != tt.wantDesc {
				t.Errorf("description %q, want %q", desc, tt.wantDesc)
			}
			if tt.check != nil && len(evs) > 0 {
				var upd []*NodeUpdate
				for _, ev := range evs {
					upd = append(upd, ev.(*NodeUpdate))
				}
				tt.check(t, upd)
			}
			if ns.GetNodeID() != 1 {
				t.Errorf("this node's ID changed to %d", ns.GetNodeID())
			}
		})
	}
}

func TestNodeMapFollowsUpdates(t *testing.T) {
	ns, _, _ := newPlugin(t, thisNode, nil)
	if err := resync(ns, 1, kubeState(vppNode(1, thisNode))); err != nil {
		t.Fatal(err)
	}
	steps := []*api.KubeStateChange{
		{Resource: node.Keyword, Key: node.Key("node2"), NewValue: k8sNode("node2", "10.1.2.0/24", "internal:10.20.0.2")},
		{Resource: vppnode.Keyword, Key: vppnode.Key(2), NewValue: vppNode(2, "node2", "192.168.16.2/24")},
		{Resource: vppnode.Keyword, Key: vppnode.Key(3), NewValue: vppNode(3, "node3")},
		{Resource: vppnode.Keyword, Key: vppnode.Key(3), PrevValue: vppNode(3, "node3")},
	}
	for _, ev := range steps {
		if _, err := ns.Update(ev, nil); err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
	}
	want := `node1: ID=1 name=node1 vpp-ips=[] mgmt-ips=[] pod-cidr=""` + "\n" +
		`node2: ID=2 name=node2 vpp-ips=[192.168.16.2/24] mgmt-ips=[10.20.0.2] pod-cidr="10.1.2.0/24"`
	if got := describeNodes(ns.GetAllNodes()); got != want {
		t.Errorf("nodes:\n%s\nwant:\n%s", got, want)
	}
}

func TestGetAllNodesReturnsCopies(t *testing.T) {
	ns, _, _ := newPlugin(t, thisNode, nil)
	if err := resync(ns, 1, kubeState(vppNode(1, thisNode, "192.168.16.1/24"), k8sNode(thisNode, "", "internal:10.20.0.1"))); err != nil {
		t.Fatal(err)
	}
	n := ns.GetAllNodes()[thisNode]
	n.ID = 99
	n.VppIPAddresses[0].IP[3] = 99
	n.MgmtIPAddresses[0][3] = 99
	if got := ns.GetAllNodes()[thisNode].String(); got != `ID=1 name=node1 vpp-ips=[192.168.16.1/24] mgmt-ips=[10.20.0.1] pod-cidr=""` {
		t.Errorf("a caller's change leaked into the node map: %s", got)
	}
}

func TestRefusedNodeUpdateFailsTheEvent(t *testing.T) {
	ns, loop, _ := newPlugin(t, thisNode, nil)
	if err := resync(ns, 1, kubeState(vppNode(1, thisNode))); err != nil {
		t.Fatal(err)
	}
	loop.err = errors.New("queue full")
	_, err := ns.Update(&api.KubeStateChange{Resource: vppnode.Keyword, Key: vppnode.Key(2), NewValue: vppNode(2, "node2")}, nil)
	if err == nil || !strings.Contains(err.Error(), "node2") || !strings.Contains(err.Error(), "queue full") || api.IsFatal(err) {
		t.Fatalf("Update error %v, want a non-fatal error naming the node and the cause", err)
	}
	if _, ok := ns.GetAllNodes()["node2"]; !ok {
		t.Error("the node map was not updated")
	}
}

func TestHandlesEveryResyncAndNodeChangesOnly(t *testing.T) {
	ns, _, _ := newPlugin(t, thisNode, nil)
	tests := []struct {
		ev   api.Event
		want bool
	}{
		{api.NewDBResync(), true},
		{&api.HealingResync{Type: api.AfterError}, true},
		{&api.HealingResync{Type: api.Periodic}, true},
		{&api.KubeStateChange{Resource: vppnode.Keyword}, true},
		{&api.KubeStateChange{Resource: node.Keyword}, true},
		{&api.KubeStateChange{Resource: pod.Keyword}, false},
		{api.NewExternalConfigChange("db", false), false},
		{&NodeUpdate{NodeName: "node2"}, false},
	}
	for _, tt := range tests {
		if got := ns.HandlesEvent(tt.ev); got != tt.want {
			t.Errorf("HandlesEvent(%s) = %v, want %v", tt.ev.GetName(), got, tt.want)
		}
	}
	if ns.String() != "nodesync" {
		t.Errorf("String() = %q", ns.String())
	}
	if err := ns.Revert(&api.KubeStateChange{}); err != nil {
		t.Errorf("Revert: %v", err)
	}
	if desc, err := ns.Update(api.NewExternalConfigChange("db", false), nil); desc != "" || err != nil {
		t.Errorf("Update of another event: %q, %v", desc, err)
	}
}

func TestNodeUpdateEvent(t *testing.T) {
	var ev api.Event = &NodeUpdate{
		NodeName:  "node2",
		PrevState: &Node{ID: 2, Name: "node2"},
		NewState:  &Node{ID: 2, Name: "node2", MgmtIPAddresses: []net.IP{net.ParseIP("10.20.0.2")}},
	}
	ue, ok := ev.(api.UpdateEvent)
	if !ok {
		t.Fatal("NodeUpdate is not an api.UpdateEvent")
	}
	if ev.GetName() != "Node Update" || ev.Method() != api.Update || ev.IsBlocking() ||
		ue.TransactionType() != api.BestEffort || ue.Direction() != api.Forward {
		t.Errorf("name %q method %v blocking %v txn %v direction %v", ev.GetName(), ev.Method(), ev.IsBlocking(), ue.TransactionType(), ue.Direction())
	}
	ev.Done(errors.New("ignored"))
	want := "Node Update: node node2 (ID 2) updated\n" +
		` * previous: ID=2 name=node2 vpp-ips=[] mgmt-ips=[] pod-cidr=""` + "\n" +
		` * new: ID=2 name=node2 vpp-ips=[] mgmt-ips=[10.20.0.2] pod-cidr=""`
	if got := ev.String(); got != want {
		t.Errorf("String():\n%s\nwant:\n%s", got, want)
	}
	if got := (&NodeUpdate{NodeName: "n", NewState: &Node{ID: 3}}).String(); !strings.HasPrefix(got, "Node Update: node n (ID 3) added\n * previous: <none>") {
		t.Errorf("String() of an added node: %q", got)
	}
	if got := (&NodeUpdate{NodeName: "n", PrevState: &Node{ID: 3}}).describe(); got != "node n (ID 3) removed" {
		t.Errorf("removed: %q", got)
	}
}

func TestInitChecksDeps(t *testing.T) {
	for _, deps := range []Deps{{EventLoop: &fakeLoop{}}, {NodeName: thisNode}} {
		if err := NewNodeSync(deps).Init(); err == nil {
			t.Errorf("Init with %+v succeeded", deps)
		}
	}
	ns := NewNodeSync(Deps{NodeName: thisNode, EventLoop: &fakeLoop{}})
	if err := ns.Init(); err != nil || ns.Log == nil {
		t.Fatalf("Init: %v (log %v)", err, ns.Log)
	}
	if ns.GetNodeID() != 0 || len(ns.GetAllNodes()) != 0 {
		t.Error("state before the first resync")
	}
	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestIPVersion(t *testing.T) {
	if IPv4.String() != "IPv4" || IPv6.String() != "IPv6" || IPVersion(5).String() != "IPVersion(5)" {
		t.Error("IPVersion names")
	}
	v4, v6 := net.ParseIP("10.0.0.1"), net.ParseIP("fd00::1")
	if !IPv4.matches(v4) || IPv4.matches(v6) || !IPv6.matches(v6) || IPv6.matches(v4) {
		t.Error("IPVersion.matches")
	}
}

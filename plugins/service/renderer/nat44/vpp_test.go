package nat44

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/cnatplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/l3plugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/natplugin"
)

// These tests run the renderer's output through the real KV scheduler and the real
// NAT and L3 descriptors into the VPP simulator, and trace packets through the NAT
// tables the simulator holds. The VPP interface descriptor is not written yet: a
// stand-in creates tagged loopbacks with the interfaces' addresses.

// loopbackIfDescriptor stands in for the VPP interface descriptor.
func loopbackIfDescriptor(ch govppapi.Channel) *kvapi.KVDescriptor {
	iface := func(v proto.Message) *ifmodel.Interface { return v.(*ifmodel.Interface) }
	request := func(req, reply govppapi.Message) error { return ch.SendRequest(req).ReceiveReply(reply) }
	return &kvapi.KVDescriptor{
		Name:        ifaceidx.DescriptorName,
		NBKeyPrefix: ifmodel.InterfacePrefix,
		KeySelector: func(key string) bool { _, ok := ifmodel.ParseNameFromKey(key); return ok },
		KeyLabel: func(key string) string {
			name, _ := ifmodel.ParseNameFromKey(key)
			return name
		},
		WithMetadata: true,
		Create: func(_ string, v proto.Message) (kvapi.Metadata, error) {
			reply := &interfaces.CreateLoopbackReply{}
			if err := request(&interfaces.CreateLoopback{}, reply); err != nil {
				return nil, err
			}
			sw := reply.SwIfIndex
			// A failed creation deletes the loopback again (a retried create must
			// not leave a second interface with the same tag), resending the
			// delete while VPP is busy.
			undo := func(err error) (kvapi.Metadata, error) {
				for range 10 {
					derr := request(&interfaces.DeleteLoopback{SwIfIndex: sw}, &interfaces.DeleteLoopbackReply{})
					if !errors.Is(derr, govppapi.BUSY) {
						break
					}
				}
				return nil, err
			}
			if err := request(&interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: sw, Tag: iface(v).Name}, &interfaces.SwInterfaceTagAddDelReply{}); err != nil {
				return undo(err)
			}
			for _, a := range iface(v).IpAddresses {
				p := netip.MustParsePrefix(a)
				addr := ip_types.AddressWithPrefix{Address: ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(p.Addr().As4())}, Len: uint8(p.Bits())}
				if err := request(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: sw, IsAdd: true, Prefix: addr}, &interfaces.SwInterfaceAddDelAddressReply{}); err != nil {
					return undo(err)
				}
			}
			return &ifaceidx.Metadata{SwIfIndex: uint32(sw), IPAddresses: iface(v).IpAddresses}, nil
		},
		Delete: func(_ string, _ proto.Message, md kvapi.Metadata) error {
			sw := interface_types.InterfaceIndex(md.(*ifaceidx.Metadata).SwIfIndex)
			return request(&interfaces.DeleteLoopback{SwIfIndex: sw}, &interfaces.DeleteLoopbackReply{})
		},
		Retrieve: func(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
			byName := make(map[string]kvapi.KVWithMetadata)
			for _, kv := range correlate {
				byName[iface(kv.Value).Name] = kv
			}
			var out []kvapi.KVWithMetadata
			req := ch.SendMultiRequest(&interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
			for {
				d := &interfaces.SwInterfaceDetails{}
				last, err := req.ReceiveReply(d)
				if err != nil {
					return nil, err
				}
				if last {
					return out, nil
				}
				if kv, ok := byName[d.Tag]; ok {
					out = append(out, kvapi.KVWithMetadata{Key: kv.Key, Value: kv.Value, Origin: kvapi.FromNB,
						Metadata: &ifaceidx.Metadata{SwIfIndex: uint32(d.SwIfIndex), IPAddresses: iface(kv.Value).IpAddresses}})
				}
			}
		},
	}
}

// agent is the scheduler with the interface stand-in and the real L3 and NAT
// descriptors, over a connection to the simulator, plus the configuration ipnet
// would own (interfaces, VRFs).
type agent struct {
	t      tb
	vpp    *vpp
	s      *kvscheduler.Scheduler
	infra  map[string]proto.Message
	synced bool // the first resync went in; later ones are full resyncs
	// faults: the simulator fails a share of the requests; commits retry
	// and wait until every value converged.
	faults bool
	// desired holds every value the agent was given and not deleted since.
	desired map[string]proto.Message
}

// newAgent starts a simulator failing the given share of state-changing
// requests (seeded) and a scheduler with the descriptors over it.
func newAgent(t tb, failProbability float64, failSeed int64) *agent {
	t.Helper()
	v := startVPPWith(t, false, vppsim.Options{FailProbability: failProbability, FailSeed: failSeed})
	a := newAgentOver(t, v, loopbackIfDescriptor(v.ch), nil, nil)
	a.faults = failProbability > 0
	for name, addrs := range map[string][]string{
		mainIf: {nodeIP + "/24"}, otherIf: {"10.10.10.5/24"}, hostIf: {"172.30.1.1/24"}, bviIf: {"192.168.30.1/24"},
		pod1If: {"10.1.1.1/32"}, pod2If: {"10.1.1.2/32"}, pod3If: {"10.1.1.6/32"},
	} {
		a.infra[ifmodel.InterfaceKey(name)] = &ifmodel.Interface{Name: name, IpAddresses: addrs}
	}
	a.infra[l3.VrfTableKey(mainVRF, l3.VrfTable_IPV4)] = &l3.VrfTable{Id: mainVRF, Label: "mainVRF"}
	a.infra[l3.VrfTableKey(podVRF, l3.VrfTable_IPV4)] = &l3.VrfTable{Id: podVRF, Label: "podVRF"}
	// the IPv6 tables, for the cnat renderer's routes of dual-stack services
	a.infra[l3.VrfTableKey(mainVRF, l3.VrfTable_IPV6)] = &l3.VrfTable{Id: mainVRF, Label: "mainVRF", Protocol: l3.VrfTable_IPV6}
	a.infra[l3.VrfTableKey(podVRF, l3.VrfTable_IPV6)] = &l3.VrfTable{Id: podVRF, Label: "podVRF", Protocol: l3.VrfTable_IPV6}
	a.commit(a.infra, false)
	return a
}

// newAgentOver starts a scheduler with the interface descriptor given and the real
// L3 and NAT descriptors over the simulator v; unless ifaces and vrfs are both nil
// (the caller fills infra then), it commits the interfaces (without addresses) and
// VRF tables given as the configuration ipnet would own.
func newAgentOver(t tb, v *vpp, ifDescriptor *kvapi.KVDescriptor, ifaces []string, vrfs map[uint32]string) *agent {
	t.Helper()
	s, err := kvscheduler.NewScheduler(kvscheduler.Deps{Log: st.QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.RegisterKVDescriptor(ifDescriptor); err != nil {
		t.Fatal(err)
	}
	l3p := &l3plugin.Plugin{Deps: l3plugin.Deps{Log: st.QuietLog(), Scheduler: s, GoVPP: v.conn}}
	natp := &natplugin.Plugin{Deps: natplugin.Deps{Log: st.QuietLog(), Scheduler: s, GoVPP: v.conn}}
	cnatp := &cnatplugin.Plugin{Deps: cnatplugin.Deps{Log: st.QuietLog(), Scheduler: s, GoVPP: v.conn}}
	for _, p := range []interface {
		Init() error
		Close() error
	}{l3p, natp, cnatp} {
		if err := p.Init(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
	}
	a := &agent{t: t, vpp: v, s: s, infra: make(map[string]proto.Message), desired: make(map[string]proto.Message)}
	if ifaces == nil && vrfs == nil {
		return a
	}
	for _, name := range ifaces {
		a.infra[ifmodel.InterfaceKey(name)] = &ifmodel.Interface{Name: name}
	}
	for id, label := range vrfs {
		a.infra[l3.VrfTableKey(id, l3.VrfTable_IPV4)] = &l3.VrfTable{Id: id, Label: label}
	}
	a.commit(a.infra, false)
	return a
}

// commit applies values (nil: delete) in one transaction; a resync replaces the whole
// configuration (infra included) and reconciles it with what VPP holds. Every value
// must end up configured and every deleted one gone; with faults, the failed
// operations are retried in the background and commit waits until they succeeded.
func (a *agent) commit(values map[string]proto.Message, resync bool) {
	a.t.Helper()
	txn := a.s.StartNBTransaction()
	for k, v := range values {
		txn.SetValue(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if resync {
		clear(a.desired)
		for k, v := range a.infra {
			txn.SetValue(k, v)
			a.desired[k] = v
		}
		ctx = kvapi.WithResync(ctx, kvapi.FullResync, false)
	}
	for k, v := range values {
		if v == nil {
			delete(a.desired, k)
		} else {
			a.desired[k] = v
		}
	}
	if a.faults {
		ctx = kvapi.WithRetry(ctx, time.Millisecond, 1000, false)
	}
	if _, err := txn.Commit(ctx); err != nil && !a.faults {
		a.t.Fatalf("commit: %v", err)
	}
	if a.faults {
		a.waitConverged(values)
		return
	}
	for k, v := range values {
		if v == nil {
			continue
		}
		if s := a.s.GetValueStatus(k); s.State != kvapi.StateConfigured {
			a.t.Errorf("%s: %s %s", k, s.State, s.Error)
		}
	}
}

// unconverged lists the values not yet where they should be: every desired value
// configured, every value deleted by the last commit gone, no value (derived ones
// included) failed or waiting for a retry.
func (a *agent) unconverged(values map[string]proto.Message) []string {
	var out []string
	for _, s := range a.s.AllValueStatuses("") {
		if s.State == kvapi.StateFailed || s.State == kvapi.StateRetrying {
			if _, desired := a.desired[s.Key]; !desired {
				out = append(out, fmt.Sprintf("%s: %s %s", s.Key, s.State, s.Error))
			}
		}
	}
	for k := range a.desired {
		if s := a.s.GetValueStatus(k); s.State != kvapi.StateConfigured {
			out = append(out, fmt.Sprintf("%s: %s %s", k, s.State, s.Error))
		}
	}
	for k, v := range values {
		if v != nil {
			continue
		}
		if s := a.s.GetValueStatus(k); s.State != kvapi.StateNonexistent && s.State != kvapi.StateRemoved {
			out = append(out, fmt.Sprintf("%s (deleted): %s %s", k, s.State, s.Error))
		}
	}
	sort.Strings(out)
	return out
}

// waitConverged waits until the scheduler's retries have programmed everything.
func (a *agent) waitConverged(values map[string]proto.Message) {
	a.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		left := a.unconverged(values)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, l := range left { // the first operations on each key, to see how it went wrong
				key, _, _ := strings.Cut(l, ":")
				tl := a.s.KeyTimeline(strings.TrimSuffix(key, " (deleted)"))
				for i, e := range tl[:min(len(tl), 4)] {
					left = append(left, fmt.Sprintf("  %s #%d %s: %s %v -> %v %s", key, i, e.TxnType, e.Op.Operation, e.Op.PrevState, e.Op.NewState, e.Op.Error))
				}
			}
			a.t.Fatalf("not converged after 20 s with %d random VPP failures:\n%s",
				a.vpp.sim.RandomFailureCount(), strings.Join(left, "\n"))
		}
		<-tick.C
	}
}

// translate asks the simulator where a packet goes.
func (a *agent) translate(proto uint8, src, dst string) []string {
	var out []string
	for _, p := range a.vpp.sim.Translate(vppsim.Packet{Protocol: proto, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst)}) {
		out = append(out, p.Src.String()+" -> "+p.Dst.String())
	}
	sort.Strings(out)
	return out
}

package l2plugin

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"
	"google.golang.org/protobuf/proto"

	l2model "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l2"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// fibDescriptor describes static L2 FIB entries
// (config/vpp/l2/v2/fib/<bd>/mac/<mac>): l2fib_add_del. An entry waits for its bridge
// domain and, for FORWARD, for its outgoing interface to be a member of it. Any change
// re-creates the entry.
func (p *Plugin) fibDescriptor() *kvapi.KVDescriptor {
	return kvapi.Typed(kvapi.TypedDescriptor[*l2model.FIBEntry, kvapi.Metadata]{
		Name:        FIBDescriptorName,
		NBKeyPrefix: l2model.FIBPrefix,
		KeySelector: func(key string) bool {
			_, _, ok := l2model.ParseFIBKey(key)
			return ok
		},
		ValueComparator: func(_ string, a, b *l2model.FIBEntry) bool { return fibEqual(a, b) },
		Validate:        validateFIB,
		Dependencies: func(_ string, e *l2model.FIBEntry) []kvapi.Dependency {
			deps := []kvapi.Dependency{{Label: BridgeDomainDep, Key: l2model.BridgeDomainKey(e.BridgeDomain)}}
			if e.Action == l2model.FIBEntry_FORWARD {
				deps = append(deps, kvapi.Dependency{Label: BDInterfaceDep,
					Key: l2model.BDInterfaceKey(e.BridgeDomain, e.OutgoingInterface)})
			}
			return deps
		},
		Create: func(_ string, e *l2model.FIBEntry) (kvapi.Metadata, error) {
			return nil, p.setFIB(e, true)
		},
		Delete: func(_ string, e *l2model.FIBEntry, _ kvapi.Metadata) error {
			return p.setFIB(e, false)
		},
		Retrieve:             p.retrieveFIBs,
		RetrieveDependencies: []string{BDDescriptorName, ifaceidx.DescriptorName},
		IsRetriableFailure:   vppbase.IsRetriable,
	})
}

// fibEqual compares entries with the MAC addresses in any notation.
func fibEqual(ea, eb *l2model.FIBEntry) bool {
	ca, cb := proto.Clone(ea).(*l2model.FIBEntry), proto.Clone(eb).(*l2model.FIBEntry)
	if ma, err := net.ParseMAC(ca.PhysAddress); err == nil {
		ca.PhysAddress = ma.String()
	}
	if mb, err := net.ParseMAC(cb.PhysAddress); err == nil {
		cb.PhysAddress = mb.String()
	}
	return proto.Equal(ca, cb)
}

func validateFIB(key string, e *l2model.FIBEntry) error {
	var fields, problems []string
	bad := func(field, format string, args ...any) {
		fields = append(fields, field)
		problems = append(problems, field+": "+fmt.Sprintf(format, args...))
	}
	bd, mac, _ := l2model.ParseFIBKey(key)
	if e.BridgeDomain == "" || e.BridgeDomain != bd {
		bad("bridge_domain", "%q does not match the key %q", e.BridgeDomain, key)
	}
	if m, err := net.ParseMAC(e.PhysAddress); err != nil || len(m) != 6 {
		bad("phys_address", "%q is not a MAC address", e.PhysAddress)
	} else if km, _ := net.ParseMAC(mac); km.String() != m.String() {
		bad("phys_address", "%s does not match the key %q", e.PhysAddress, key)
	}
	switch e.Action {
	case l2model.FIBEntry_FORWARD:
		if e.OutgoingInterface == "" {
			bad("outgoing_interface", "a FORWARD entry needs an outgoing interface")
		}
	case l2model.FIBEntry_DROP:
		if e.BridgedVirtualInterface {
			bad("bridged_virtual_interface", "a DROP entry cannot be the BVI's")
		}
	default:
		bad("action", "unknown action %d", e.Action)
	}
	if len(problems) == 0 {
		return nil
	}
	return kvapi.NewInvalidValueError(errors.New(strings.Join(problems, "; ")), fields...)
}

func (p *Plugin) setFIB(e *l2model.FIBEntry, isAdd bool) error {
	what := fmt.Sprintf("L2 FIB entry %s in bridge domain %s (add=%t)", e.PhysAddress, e.BridgeDomain, isAdd)
	bd, ok := p.GetBDIndex().LookupByName(e.BridgeDomain)
	if !ok {
		return fmt.Errorf("%s: bridge domain not in the index", what)
	}
	mac, err := ethernet_types.ParseMacAddress(e.PhysAddress)
	if err != nil {
		return kvapi.NewInvalidValueError(fmt.Errorf("%s: %w", what, err), "phys_address")
	}
	sw := noIndex
	if e.Action == l2model.FIBEntry_FORWARD {
		md, ok := p.ifIndex().LookupByName(e.OutgoingInterface)
		if !ok {
			return fmt.Errorf("%s: interface %s not in the index", what, e.OutgoingInterface)
		}
		sw = md.SwIfIndex
	}
	req := &l2.L2fibAddDel{Mac: mac, BdID: bd.ID, SwIfIndex: interface_types.InterfaceIndex(sw), IsAdd: isAdd,
		StaticMac: e.StaticConfig, FilterMac: e.Action == l2model.FIBEntry_DROP, BviMac: e.BridgedVirtualInterface}
	if err := vppbase.Call(p.ch, req, &l2.L2fibAddDelReply{}); err != nil {
		return fmt.Errorf("%s, bd-id %d: %w", what, bd.ID, err)
	}
	return nil
}

// retrieveFIBs reads the L2 FIBs of the agent's bridge domains. Entries NB asks for
// are FromNB; the others (learned, the BVI entries VPP adds itself) are left with an
// unknown origin, which the scheduler leaves alone unless it created them itself.
func (p *Plugin) retrieveFIBs(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	list, err := govppmux.Dump[l2.L2FibTableDetails](p.ch, &l2.L2FibTableDump{BdID: noIndex})
	if err != nil {
		return nil, fmt.Errorf("retrieve L2 FIB: %w", err)
	}
	want := make(map[string]*l2model.FIBEntry, len(correlate))
	for _, kv := range correlate {
		if e, ok := kv.Value.(*l2model.FIBEntry); ok {
			want[kv.Key] = e
		}
	}
	bdNames := p.GetBDIndex().nameByID()
	ifNames := p.interfaceNames()
	var out []kvapi.KVWithMetadata
	for _, d := range list {
		bd, known := bdNames[d.BdID]
		if !known {
			continue
		}
		e := &l2model.FIBEntry{BridgeDomain: bd, PhysAddress: d.Mac.String(), StaticConfig: d.StaticMac,
			BridgedVirtualInterface: d.BviMac}
		if d.FilterMac {
			e.Action = l2model.FIBEntry_DROP
		} else {
			e.OutgoingInterface = ifNames[uint32(d.SwIfIndex)]
		}
		key := l2model.FIBKey(bd, e.PhysAddress)
		origin := kvapi.UnknownOrigin
		if w := want[key]; w != nil {
			origin = kvapi.FromNB
			if fibEqual(w, e) {
				e = proto.Clone(w).(*l2model.FIBEntry) // NB's spelling of the MAC
			}
		}
		out = append(out, kvapi.KVWithMetadata{Key: key, Value: e, Origin: origin})
	}
	return out, nil
}

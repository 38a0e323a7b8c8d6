package l3plugin

import (
	"fmt"

	"go.fd.io/govpp/binapi/ip"

	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// VrfTableDescriptorName names the descriptor of VRF tables.
const VrfTableDescriptorName = "vpp-vrf-table"

// vrfDescriptor implements the callbacks of the VRF table descriptor.
//
// A table is created with ip_table_add_del (the label becomes VPP's name of
// the table) and deleted with ip_table_add_del is_add=0, which also flushes
// the routes added through the API. Table 0 of each protocol exists in VPP
// from the start: creating or deleting it is a no-op. VPP cannot rename a
// table, so the label only matters at creation: values that differ only in
// the label are equal (no operation).
type vrfDescriptor struct {
	base
}

// NewVrfTableDescriptor returns the descriptor of VPP VRF tables.
func NewVrfTableDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &vrfDescriptor{base: vppbase.NewDescriptor(deps, VrfTableDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*l3.VrfTable, kvapi.Metadata]{
		Name:        VrfTableDescriptorName,
		NBKeyPrefix: l3.VrfTablePrefix,
		KeySelector: func(key string) bool {
			_, _, ok := l3.ParseVrfTableKey(key)
			return ok
		},
		ValueComparator: func(_ string, a, b *l3.VrfTable) bool {
			x, y := a, b
			return x.GetId() == y.GetId() && x.GetProtocol() == y.GetProtocol()
		},
		Validate:           func(key string, v *l3.VrfTable) error { return ValidateVrfTable(key, v) },
		Create:             func(_ string, v *l3.VrfTable) (kvapi.Metadata, error) { return nil, d.addDel(v, true) },
		Delete:             func(_ string, v *l3.VrfTable, _ kvapi.Metadata) error { return d.addDel(v, false) },
		Retrieve:           d.retrieve,
		IsRetriableFailure: vppbase.IsRetriable,
	})
}

// ValidateVrfTable checks a VRF table and that key is its key.
func ValidateVrfTable(key string, t *l3.VrfTable) error {
	if _, known := l3.VrfTable_Protocol_name[int32(t.GetProtocol())]; !known {
		return kvapi.NewInvalidValueError(fmt.Errorf("unknown protocol %d", t.GetProtocol()), "protocol")
	}
	if len(t.GetLabel()) > 63 {
		return kvapi.NewInvalidValueError(fmt.Errorf("label %q is longer than 63 bytes", t.GetLabel()), "label")
	}
	if want := l3.VrfTableKey(t.GetId(), t.GetProtocol()); key != "" && key != want {
		return kvapi.NewInvalidValueError(fmt.Errorf("VRF table key %q does not match its value (want %q)", key, want), "id", "protocol")
	}
	return nil
}

func (d *vrfDescriptor) addDel(t *l3.VrfTable, isAdd bool) error {
	if t.GetId() == 0 {
		return nil // exists in VPP from the start, for good
	}
	req := &ip.IPTableAddDel{IsAdd: isAdd, Table: ip.IPTable{
		TableID: t.GetId(), IsIP6: t.GetProtocol() == l3.VrfTable_IPV6, Name: t.GetLabel()}}
	op := "delete"
	if isAdd {
		op = "create"
	}
	if err := vppbase.Call(d.Ch, req, &ip.IPTableAddDelReply{}); err != nil {
		return fmt.Errorf("%s VRF table %d (%s): %w", op, t.GetId(), t.GetProtocol(), err)
	}
	d.Log.WithFields(map[string]any{"vrf": t.GetId(), "protocol": t.GetProtocol().String(), "label": t.GetLabel()}).
		Debugf("VRF table %sd", op)
	return nil
}

// retrieve lists VPP's tables except table 0, which is reported only when NB
// asks for it. The label comes from NB when NB has the table (VPP names
// tables it created implicitly by itself), otherwise from VPP.
func (d *vrfDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	nb := nbValues[*l3.VrfTable](correlate)
	tables, err := govppmux.Dump[ip.IPTableDetails](d.Ch, &ip.IPTableDump{})
	if err != nil {
		return nil, fmt.Errorf("retrieve VRF tables: %w", err)
	}
	var out []kvapi.KVWithMetadata
	for _, t := range tables {
		p := l3.VrfTable_IPV4
		if t.Table.IsIP6 {
			p = l3.VrfTable_IPV6
		}
		key := l3.VrfTableKey(t.Table.TableID, p)
		want, wanted := nb[key]
		if t.Table.TableID == 0 && !wanted {
			continue
		}
		v := &l3.VrfTable{Id: t.Table.TableID, Protocol: p, Label: t.Table.Name}
		if wanted {
			v = want
		}
		out = append(out, kvapi.KVWithMetadata{Key: key, Value: v, Origin: kvapi.UnknownOrigin})
	}
	return out, nil
}

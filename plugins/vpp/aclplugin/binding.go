package aclplugin

import (
	"errors"
	"fmt"
	"slices"

	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/interface_types"

	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// InterfaceACLsDescriptorName names the descriptor of interface ACL lists.
const InterfaceACLsDescriptorName = "vpp-acl-interface"

// Dependency labels of InterfaceACLs.
const (
	DepInterface = "interface-exists"
	DepACL       = "acl-exists"
)

type bindingDescriptor struct{ base }

// NewInterfaceACLsDescriptor returns the descriptor of interface ACL lists.
func NewInterfaceACLsDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &bindingDescriptor{base: newBase(deps, InterfaceACLsDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*vpp_acl.InterfaceACLs, kvapi.Metadata]{
		Name:        InterfaceACLsDescriptorName,
		NBKeyPrefix: vpp_acl.InterfacePrefix,
		KeySelector: func(key string) bool { i, ok := vpp_acl.ParseInterfaceKey(key); return ok && i != "" },
		KeyLabel: func(key string) string {
			i, _ := vpp_acl.ParseInterfaceKey(key)
			return i
		},
		Validate: ValidateInterfaceACLs,
		Create: func(_ string, v *vpp_acl.InterfaceACLs) (kvapi.Metadata, error) {
			return nil, d.set(v.GetInterface(), v.GetInputAcls(), v.GetOutputAcls())
		},
		Update: func(_ string, _, v *vpp_acl.InterfaceACLs, _ kvapi.Metadata) (kvapi.Metadata, error) {
			return nil, d.set(v.GetInterface(), v.GetInputAcls(), v.GetOutputAcls())
		},
		Delete: func(_ string, v *vpp_acl.InterfaceACLs, _ kvapi.Metadata) error {
			return d.set(v.GetInterface(), nil, nil)
		},
		Retrieve:           d.retrieve,
		IsRetriableFailure: vppbase.IsRetriable,
		Dependencies: func(_ string, v *vpp_acl.InterfaceACLs) []kvapi.Dependency {
			deps := []kvapi.Dependency{{Label: DepInterface, Key: ifmodel.InterfaceKey(v.GetInterface())}}
			seen := map[string]bool{}
			for _, n := range append(slices.Clone(v.GetInputAcls()), v.GetOutputAcls()...) {
				if !seen[n] {
					seen[n] = true
					deps = append(deps, kvapi.Dependency{Label: DepACL + "-" + n, Key: vpp_acl.ACLKey(n)})
				}
			}
			return deps
		},
		RetrieveDependencies: []string{ifaceidx.DescriptorName, ACLDescriptorName},
	})
}

// ValidateInterfaceACLs checks the interface and that no ACL is listed twice
// in one direction (VPP refuses it).
func ValidateInterfaceACLs(key string, v *vpp_acl.InterfaceACLs) error {
	switch {
	case v.GetInterface() == "":
		return kvapi.NewInvalidValueError(errors.New("empty interface"), "interface")
	case key != "" && key != vpp_acl.InterfaceKey(v.GetInterface()):
		return kvapi.NewInvalidValueError(fmt.Errorf("key %q does not match interface %q", key, v.GetInterface()), "interface")
	case len(v.GetInputAcls())+len(v.GetOutputAcls()) > 255:
		return kvapi.NewInvalidValueError(fmt.Errorf("interface %s: more than 255 ACLs", v.GetInterface()), "input_acls")
	}
	for field, list := range map[string][]string{"input_acls": v.GetInputAcls(), "output_acls": v.GetOutputAcls()} {
		seen := map[string]bool{}
		for _, n := range list {
			if n == "" || seen[n] {
				return kvapi.NewInvalidValueError(fmt.Errorf("interface %s: ACL %q empty or listed twice", v.GetInterface(), n), field)
			}
			seen[n] = true
		}
	}
	return nil
}

func (d *bindingDescriptor) aclIndex(name string) (uint32, error) {
	m := d.acls()
	if m != nil {
		if md, ok := m.GetValue(name); ok {
			if a, ok := md.(*ACLMetadata); ok && a != nil {
				return a.Index, nil
			}
		}
	}
	return 0, fmt.Errorf("ACL %q is not known to VPP (no acl_index)", name)
}

// set replaces both lists of the interface with one acl_interface_set_acl_list.
func (d *bindingDescriptor) set(iface string, input, output []string) error {
	sw, err := d.SwIfIndex(iface, "ACLs of interface "+iface)
	if err != nil {
		return err
	}
	acls := make([]uint32, 0, len(input)+len(output))
	for _, n := range append(slices.Clone(input), output...) {
		idx, err := d.aclIndex(n)
		if err != nil {
			return fmt.Errorf("ACLs of interface %s: %w", iface, err)
		}
		acls = append(acls, idx)
	}
	req := &acl.ACLInterfaceSetACLList{SwIfIndex: interface_types.InterfaceIndex(sw),
		Count: uint8(len(acls)), NInput: uint8(len(input)), Acls: acls}
	if err := vppbase.Call(d.Ch, req, &acl.ACLInterfaceSetACLListReply{}); err != nil {
		return fmt.Errorf("set ACLs of interface %s (input %v, output %v): %w", iface, input, output, err)
	}
	return nil
}

// retrieve reads the ACL lists of every known interface that has any.
func (d *bindingDescriptor) retrieve(_ []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	aclNames := map[uint32]string{} // acl_index -> name
	if m := d.acls(); m != nil {
		for _, n := range m.ListAllNames() {
			if idx, err := d.aclIndex(n); err == nil {
				aclNames[idx] = n
			}
		}
	}
	names := d.IfaceNames()
	var out []kvapi.KVWithMetadata
	mr := d.Ch.SendMultiRequest(&acl.ACLInterfaceListDump{SwIfIndex: interface_types.InterfaceIndex(noIndex)})
	for {
		det := &acl.ACLInterfaceListDetails{}
		last, err := mr.ReceiveReply(det)
		if err != nil {
			return nil, fmt.Errorf("dump interface ACL lists: %w", err)
		}
		if last {
			return out, nil
		}
		if len(det.Acls) == 0 {
			continue
		}
		iface, ok := names[uint32(det.SwIfIndex)]
		if !ok {
			continue // not an interface of the agent
		}
		v := &vpp_acl.InterfaceACLs{Interface: iface}
		known := true
		for i, a := range det.Acls {
			n, ok := aclNames[a]
			if !ok {
				known = false
				break
			}
			if i < int(det.NInput) {
				v.InputAcls = append(v.InputAcls, n)
			} else {
				v.OutputAcls = append(v.OutputAcls, n)
			}
		}
		if !known {
			d.Log.WithField("interface", iface).Warn("interface has ACLs that are not the agent's: left alone")
			continue
		}
		out = append(out, kvapi.KVWithMetadata{Key: vpp_acl.InterfaceKey(iface), Value: v, Origin: kvapi.FromNB})
	}
}

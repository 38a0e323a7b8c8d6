package cnatplugin

import (
	"fmt"

	"go.fd.io/govpp/binapi/feature"
	"go.fd.io/govpp/binapi/interface_types"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// SnatFeatureDescriptorName names the descriptor of the cnat-snat feature on
// interfaces.
const SnatFeatureDescriptorName = "vpp-cnat-snat-feature"

// snatFeatures are the arc and node of cnat-snat per family (cnat_node_snat.c
// registers cnat-snat-ip4 on ip4-unicast and cnat-snat-ip6 on ip6-unicast).
var snatFeatures = map[cnatmodel.AddressFamily]struct{ arc, node string }{
	cnatmodel.AddressFamily_IPV4: {"ip4-unicast", "cnat-snat-ip4"},
	cnatmodel.AddressFamily_IPV6: {"ip6-unicast", "cnat-snat-ip6"},
}

type featureDescriptor struct {
	vppbase.Descriptor
}

// NewSnatFeatureDescriptor returns the descriptor of the cnat-snat feature on
// interfaces (feature_enable_disable; read back with feature_is_enabled).
func NewSnatFeatureDescriptor(deps vppbase.DescriptorDeps) *kvapi.KVDescriptor {
	d := &featureDescriptor{Descriptor: vppbase.NewDescriptor(deps, SnatFeatureDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*cnatmodel.SnatFeature, kvapi.Metadata]{
		Name:        SnatFeatureDescriptorName,
		NBKeyPrefix: cnatmodel.SnatFeaturePrefix,
		KeySelector: func(key string) bool { _, _, ok := cnatmodel.ParseSnatFeatureKey(key); return ok },
		Validate: func(key string, v *cnatmodel.SnatFeature) error {
			if err := cnatmodel.ValidateSnatFeature(v); err != nil {
				return invalid(err)
			}
			if want, _ := cnatmodel.ModelKey(v); key != "" && key != want {
				return keyMismatch("cnat-snat feature", key, want, "interface", "family")
			}
			return nil
		},
		Create: func(_ string, v *cnatmodel.SnatFeature) (kvapi.Metadata, error) {
			return nil, d.enable(v, true)
		},
		Delete: func(_ string, v *cnatmodel.SnatFeature, _ kvapi.Metadata) error {
			return d.enable(v, false)
		},
		Retrieve:           d.retrieve,
		IsRetriableFailure: vppbase.IsRetriable,
		Dependencies: func(_ string, v *cnatmodel.SnatFeature) []kvapi.Dependency {
			return append(interfaceDep(v.GetInterface()),
				kvapi.Dependency{Label: DepSnatAddress, Key: SnatAddressKey(v.GetFamily())})
		},
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
	})
}

func (d *featureDescriptor) enable(v *cnatmodel.SnatFeature, on bool) error {
	f := snatFeatures[v.GetFamily()]
	op := "disable"
	if on {
		op = "enable"
	}
	what := fmt.Sprintf("%s %s on %s", op, f.node, v.GetInterface())
	sw, err := d.SwIfIndex(v.GetInterface(), what)
	if err != nil {
		return err
	}
	req := &feature.FeatureEnableDisable{SwIfIndex: interface_types.InterfaceIndex(sw), Enable: on, ArcName: f.arc, FeatureName: f.node}
	if err := vppbase.Call(d.Ch, req, &feature.FeatureEnableDisableReply{}); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	d.Log.Debugf("%s done", what)
	return nil
}

// retrieve asks VPP, for every feature NB wants on an interface VPP has, whether it
// is enabled. VPP has no dump of an interface's features, and asking for every
// interface and family would cost two requests per pod at every resync; so a
// feature enabled on an interface where NB does not want it is not found (nothing
// but this descriptor enables cnat-snat, and it disables the feature before NB's
// value goes).
func (d *featureDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	var out []kvapi.KVWithMetadata
	idx := ifaceidx.New(d.Ifaces())
	for _, kv := range correlate {
		v, ok := kv.Value.(*cnatmodel.SnatFeature)
		if !ok {
			continue
		}
		md, ok := idx.LookupByName(v.GetInterface())
		if !ok {
			continue
		}
		f := snatFeatures[v.GetFamily()]
		reply := &feature.FeatureIsEnabledReply{}
		req := &feature.FeatureIsEnabled{ArcName: f.arc, FeatureName: f.node, SwIfIndex: interface_types.InterfaceIndex(md.SwIfIndex)}
		if err := vppbase.Call(d.Ch, req, reply); err != nil {
			return nil, fmt.Errorf("retrieve %s on %s: %w", f.node, v.GetInterface(), err)
		}
		if reply.IsEnabled {
			out = append(out, kvapi.KVWithMetadata{Key: kv.Key, Value: v, Origin: kvapi.FromNB})
		}
	}
	return out, nil
}

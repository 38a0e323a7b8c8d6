package cnatplugin

import (
	"fmt"

	"go.fd.io/govpp/binapi/feature"
	"go.fd.io/govpp/binapi/interface_types"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
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
			want, _ := cnatmodel.ModelKey(v)
			return checked(cnatmodel.ValidateSnatFeature(v), "cnat-snat feature", key, want, "interface", "family")
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

// retrieve asks VPP, for every interface the agent knows and both families, whether
// cnat-snat is enabled (VPP has no dump of an interface's features): a feature NB no
// longer wants is found too and disabled, which matters when a node leaves cnat
// (its SNAT addresses are cleared to zeros, which VPP would rewrite sources to).
// The requests are pipelined: two per interface, one round trip in all.
func (d *featureDescriptor) retrieve(_ []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	type query struct {
		v     *cnatmodel.SnatFeature
		sw    uint32
		reply feature.FeatureIsEnabledReply
	}
	names := d.IfaceNames()
	queries := make([]query, 0, 2*len(names))
	for sw, name := range names {
		for _, fam := range []cnatmodel.AddressFamily{cnatmodel.AddressFamily_IPV4, cnatmodel.AddressFamily_IPV6} {
			queries = append(queries, query{v: &cnatmodel.SnatFeature{Interface: name, Family: fam}, sw: sw})
		}
	}
	what := func(q *query) string {
		return "retrieve " + snatFeatures[q.v.GetFamily()].node + " on " + q.v.GetInterface()
	}
	pipe := govppmux.NewPipe(d.Ch)
	var errs []error
	sent, received := 0, 0
	receive := func() {
		q := &queries[received]
		received++
		if err := pipe.Receive(&q.reply); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what(q), err))
		}
	}
	for ; sent < len(queries) && len(errs) == 0; sent++ {
		if sent-received >= pipe.Window() {
			receive()
		}
		q := &queries[sent]
		f := snatFeatures[q.v.GetFamily()]
		req := &feature.FeatureIsEnabled{ArcName: f.arc, FeatureName: f.node, SwIfIndex: interface_types.InterfaceIndex(q.sw)}
		if err := pipe.Send(req); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what(q), err))
			break
		}
	}
	for received < sent {
		receive() // read every reply in flight, so the channel can be used again
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	var out []kvapi.KVWithMetadata
	for i := range queries {
		if q := &queries[i]; q.reply.IsEnabled {
			key, _ := cnatmodel.ModelKey(q.v)
			out = append(out, kvapi.KVWithMetadata{Key: key, Value: q.v, Origin: kvapi.FromNB})
		}
	}
	return out, nil
}

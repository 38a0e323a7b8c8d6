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

// SnatFeatureDescriptorName names the descriptor of the cnat features
// (cnat-snat, cnat-input, cnat-output) on interfaces.
const SnatFeatureDescriptorName = "vpp-cnat-snat-feature"

// arcNode is a feature: the arc it is on and its node.
type arcNode struct{ arc, node string }

// FeatureArcNode returns the arc and the node name VPP 25.10 registers for a
// feature value: cnat-snat-ip4/ip6 on ip4/ip6-unicast (cnat_node_snat.c),
// cnat-input-ip4/ip6 on ip4/ip6-unicast and cnat-output-ip4/ip6 on ip4/ip6-output
// (cnat_node_feature.c, VNET_FEATURE_INIT): the feature_enable_disable request's
// arc_name and feature_name.
func FeatureArcNode(v *cnatmodel.SnatFeature) (arc, node string) {
	f := featureOf(v)
	return f.arc, f.node
}

func featureOf(v *cnatmodel.SnatFeature) arcNode {
	arc, suffix := "ip4-", "-ip4"
	if v.GetFamily() == cnatmodel.AddressFamily_IPV6 {
		arc, suffix = "ip6-", "-ip6"
	}
	switch v.GetNode() {
	case cnatmodel.SnatFeature_INPUT:
		return arcNode{arc + "unicast", "cnat-input" + suffix}
	case cnatmodel.SnatFeature_OUTPUT:
		return arcNode{arc + "output", "cnat-output" + suffix}
	default:
		return arcNode{arc + "unicast", "cnat-snat" + suffix}
	}
}

// featureNodes are the nodes a feature value can name, in the order Retrieve asks.
var featureNodes = []cnatmodel.SnatFeature_Node{cnatmodel.SnatFeature_SNAT, cnatmodel.SnatFeature_INPUT, cnatmodel.SnatFeature_OUTPUT}

type featureDescriptor struct {
	vppbase.Descriptor
}

// NewSnatFeatureDescriptor returns the descriptor of the cnat features on
// interfaces (feature_enable_disable; read back with feature_is_enabled).
func NewSnatFeatureDescriptor(deps vppbase.DescriptorDeps) *kvapi.KVDescriptor {
	d := &featureDescriptor{Descriptor: vppbase.NewDescriptor(deps, SnatFeatureDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*cnatmodel.SnatFeature, kvapi.Metadata]{
		Name:        SnatFeatureDescriptorName,
		NBKeyPrefix: cnatmodel.SnatFeaturePrefix,
		KeySelector: func(key string) bool { _, _, _, ok := cnatmodel.ParseSnatFeatureKey(key); return ok },
		Validate: func(key string, v *cnatmodel.SnatFeature) error {
			want, _ := cnatmodel.ModelKey(v)
			return checked(cnatmodel.ValidateSnatFeature(v), "cnat feature", key, want, "interface", "node", "family")
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
			deps := interfaceDep(v.GetInterface())
			if v.GetNode() != cnatmodel.SnatFeature_SNAT {
				// cnat-input never source-NATs; cnat-output skips the source NAT
				// while the family's SNAT address is zero (ip_address_is_zero in
				// cnat_output_feature_fn), so neither waits for one.
				return deps
			}
			return append(deps, kvapi.Dependency{Label: DepSnatAddress, Key: SnatAddressKey(v.GetFamily())})
		},
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
	})
}

func (d *featureDescriptor) enable(v *cnatmodel.SnatFeature, on bool) error {
	f := featureOf(v)
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

// retrieve asks VPP, for every interface the agent knows, both families and the
// three nodes, whether the feature is enabled (VPP has no dump of an interface's
// features): a feature NB no longer wants is found too and disabled, which matters
// when a node leaves cnat (its SNAT addresses are cleared to zeros, which VPP would
// rewrite sources to). The requests are pipelined: six per interface, one round
// trip in all.
func (d *featureDescriptor) retrieve(_ []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	type query struct {
		v     *cnatmodel.SnatFeature
		sw    uint32
		reply feature.FeatureIsEnabledReply
	}
	names := d.IfaceNames()
	queries := make([]query, 0, 2*len(featureNodes)*len(names))
	for sw, name := range names {
		for _, fam := range []cnatmodel.AddressFamily{cnatmodel.AddressFamily_IPV4, cnatmodel.AddressFamily_IPV6} {
			for _, node := range featureNodes {
				queries = append(queries, query{v: &cnatmodel.SnatFeature{Interface: name, Family: fam, Node: node}, sw: sw})
			}
		}
	}
	what := func(q *query) string {
		return "retrieve " + featureOf(q.v).node + " on " + q.v.GetInterface()
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
		f := featureOf(q.v)
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

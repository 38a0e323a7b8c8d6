// Package dbresources is the table of the Kubernetes-state resources that contiv-agent
// reads from etcd under ksrkey.KsrPrefix: for each one its keyword (the key of
// api.KubeStateData), its key prefix (relative to the KSR prefix) and the protobuf type
// of its values. It also fixes how those values are encoded in etcd (protobuf JSON, as
// the Ligato etcd broker of upstream Contiv-VPP wrote them), so writers (contiv-ksr,
// nodesync, the standalone loader) and readers (dbwatcher) agree.
//
// Reading is on the path of every change the agent sees: Unmarshal decodes with
// pkg/pbjson (several times faster than protojson, a quarter of its allocations) and
// leaves what pbjson does not take to protojson, whose values and errors are the
// reference (FuzzDecodeMatchesProtojson); the resource table is built once, so a lookup
// by key costs one copy of its entry.
//
// It does not talk to etcd and does not cover the external configuration under
// /vnf-agent/<node>/ (vpp-agent model keys, decoded by api/models).
package dbresources

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/pkg/pbjson"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrsync"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/nodeconfig"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
)

// DBResource describes one resource kind stored in etcd by contiv-ksr (or nodesync).
type DBResource struct {
	// Keyword names the resource, e.g. "pod"; it is the key of api.KubeStateData.
	Keyword string
	// KeyPrefix is the prefix of the resource's keys relative to ksrkey.KsrPrefix,
	// e.g. "k8s/pod/".
	KeyPrefix string
	// ValueType is an empty value of the resource's protobuf type; use NewValue or
	// Unmarshal to get a fresh one, never fill this one in.
	ValueType proto.Message
	// KeyOf returns the key (relative to ksrkey.KsrPrefix) that a value of the resource
	// belongs under, built from the identity inside it (name and namespace, the node
	// name, the node ID), and that identity for messages. A value of another type gives
	// ok false.
	KeyOf func(v proto.Message) (key, identity string, ok bool)

	// dec is the pbjson decoder of ValueType (nil: Unmarshal looks it up by type).
	dec *pbjson.Decoder
	// keyOnly is KeyOf without the identity, which CheckKey formats only for its error
	// (nil for a resource built outside this package: CheckKey calls KeyOf).
	keyOnly func(v proto.Message) (key string, ok bool)
}

// GetDBResources returns the resources the agent watches, in the upstream order:
// vppnode, nodeconfig, node, pod, namespace, policy, service, endpoints, then this
// port's additions endpointslice, servicecidr and ksrsync (contiv-ksr's sync markers). Every call
// returns new values, so callers may keep or change them.
func GetDBResources() []*DBResource {
	t := table()
	out := make([]*DBResource, len(t))
	for i, r := range t {
		out[i] = r.clone()
	}
	return out
}

// clone returns a copy of r with its own ValueType.
func (r *DBResource) clone() *DBResource {
	c := *r
	c.ValueType = r.NewValue()
	return &c
}

// table is the resource table, built once with the pbjson decoder of every type; it is
// immutable (derived from the generated descriptors and, like them, shared by the whole
// process) and only copies of its entries leave the package. Building the table once
// keeps GetResourceByKey, called for every change the agent reads, to one allocation.
var table = sync.OnceValue(func() []*DBResource {
	res := resources()
	for _, r := range res {
		// A type pbjson cannot compile keeps dec nil and is decoded by protojson only
		// (TestEveryResourceHasAFastDecoder keeps this from happening unnoticed).
		r.dec, _ = pbjson.NewDecoder(r.ValueType.ProtoReflect().Type())
	}
	return res
})

// resources builds the resource table.
func resources() []*DBResource {
	return []*DBResource{
		typed(vppnode.Keyword, vppnode.KeyPrefix(), &vppnode.VppNode{},
			func(v *vppnode.VppNode) string { return vppnode.Key(v.GetId()) },
			func(v *vppnode.VppNode) string { return fmt.Sprintf("id %d", v.GetId()) }),
		typed(nodeconfig.Keyword, nodeconfig.KeyPrefix(), &nodeconfig.NodeConfig{},
			func(v *nodeconfig.NodeConfig) string { return nodeconfig.Key(v.GetNodeName()) },
			func(v *nodeconfig.NodeConfig) string { return fmt.Sprintf("node %q", v.GetNodeName()) }),
		typed(node.Keyword, node.KeyPrefix(), &node.Node{},
			func(v *node.Node) string { return node.Key(v.GetName()) },
			func(v *node.Node) string { return named(v.GetName(), "") }),
		typed(pod.Keyword, pod.KeyPrefix(), &pod.Pod{},
			func(v *pod.Pod) string { return pod.Key(v.GetName(), v.GetNamespace()) },
			func(v *pod.Pod) string { return named(v.GetName(), v.GetNamespace()) }),
		typed(namespace.Keyword, namespace.KeyPrefix(), &namespace.Namespace{},
			func(v *namespace.Namespace) string { return namespace.Key(v.GetName()) },
			func(v *namespace.Namespace) string { return named(v.GetName(), "") }),
		typed(policy.Keyword, policy.KeyPrefix(), &policy.Policy{},
			func(v *policy.Policy) string { return policy.Key(v.GetName(), v.GetNamespace()) },
			func(v *policy.Policy) string { return named(v.GetName(), v.GetNamespace()) }),
		typed(service.Keyword, service.KeyPrefix(), &service.Service{},
			func(v *service.Service) string { return service.Key(v.GetName(), v.GetNamespace()) },
			func(v *service.Service) string { return named(v.GetName(), v.GetNamespace()) }),
		typed(endpoints.Keyword, endpoints.KeyPrefix(), &endpoints.Endpoints{},
			func(v *endpoints.Endpoints) string { return endpoints.Key(v.GetName(), v.GetNamespace()) },
			func(v *endpoints.Endpoints) string { return named(v.GetName(), v.GetNamespace()) }),
		typed(endpointslice.Keyword, endpointslice.KeyPrefix(), &endpointslice.EndpointSlice{},
			func(v *endpointslice.EndpointSlice) string { return endpointslice.Key(v.GetName(), v.GetNamespace()) },
			func(v *endpointslice.EndpointSlice) string { return named(v.GetName(), v.GetNamespace()) }),
		typed(servicecidr.Keyword, servicecidr.KeyPrefix(), &servicecidr.ServiceCIDR{},
			func(v *servicecidr.ServiceCIDR) string { return servicecidr.Key(v.GetName()) },
			func(v *servicecidr.ServiceCIDR) string { return named(v.GetName(), "") }),
		typed(ksrsync.Keyword, ksrsync.KeyPrefix(), &ksrsync.SyncMarker{},
			func(v *ksrsync.SyncMarker) string { return ksrsync.Key(v.GetResource()) },
			func(v *ksrsync.SyncMarker) string { return fmt.Sprintf("resource %q", v.GetResource()) }),
	}
}

// typed builds the resource whose values are of type V: key gives the key a value
// belongs under, identity describes the value for messages.
func typed[V proto.Message](keyword, prefix string, zero V, key, identity func(V) string) *DBResource {
	return &DBResource{Keyword: keyword, KeyPrefix: prefix, ValueType: zero,
		KeyOf: func(m proto.Message) (string, string, bool) {
			v, ok := m.(V)
			if !ok {
				return "", "", false
			}
			return key(v), identity(v), true
		},
		keyOnly: func(m proto.Message) (string, bool) {
			v, ok := m.(V)
			if !ok {
				return "", false
			}
			return key(v), true
		},
	}
}

// named describes a name (and namespace) for messages.
func named(name, namespace string) string {
	if namespace == "" {
		return fmt.Sprintf("name %q", name)
	}
	return fmt.Sprintf("name %q in namespace %q", name, namespace)
}

// ErrIdentityMismatch is wrapped by CheckKey when a value's identity disagrees with its key.
var ErrIdentityMismatch = errors.New("value identity disagrees with its key")

// CheckKey verifies that value, read under key (relative to ksrkey.KsrPrefix), carries
// the identity of that key: one object has one identity, whether it is looked up by key
// (updates) or by the name inside it (resyncs). The error names the key and the identity.
func (r *DBResource) CheckKey(key string, value proto.Message) error {
	if r.keyOnly != nil {
		if want, ok := r.keyOnly(value); ok && want == key {
			return nil
		}
	}
	want, id, ok := r.KeyOf(value)
	if !ok {
		return fmt.Errorf("%s value under %s: unexpected type %T", r.Keyword, key, value)
	}
	if want != key {
		return fmt.Errorf("%w: %s value under %s has %s, which belongs under %s", ErrIdentityMismatch, r.Keyword, key, id, want)
	}
	return nil
}

// GetResourceByKey returns the resource a key belongs to; the key is relative to
// ksrkey.KsrPrefix (e.g. "k8s/pod/web/namespace/default"). ok is false for keys of no
// known resource, including a bare prefix without an identifier.
func GetResourceByKey(key string) (res *DBResource, ok bool) {
	for _, r := range table() {
		if len(key) > len(r.KeyPrefix) && strings.HasPrefix(key, r.KeyPrefix) {
			return r.clone(), true
		}
	}
	return nil, false
}

// Keywords returns the keywords of every resource, in the order of GetDBResources; it is
// what api.NewKubeStateData takes.
func Keywords() []string {
	res := table()
	kw := make([]string, len(res))
	for i, r := range res {
		kw[i] = r.Keyword
	}
	return kw
}

// NewValue returns a new empty value of the resource's type.
func (r *DBResource) NewValue() proto.Message {
	return r.ValueType.ProtoReflect().New().Interface()
}

// Unmarshal decodes a value of the resource as stored in etcd (see Marshal). Fields the
// type does not know are ignored, so newer writers do not break older readers.
//
// The bytes go through pbjson first (several times faster, a fraction of the
// allocations); what pbjson does not take (anything outside the JSON contiv-ksr writes,
// including every invalid input) is decoded by protojson, so values and error texts are
// protojson's.
func (r *DBResource) Unmarshal(data []byte) (proto.Message, error) {
	if dec := r.decoder(); dec != nil {
		if v, err := dec.Decode(data); err == nil {
			return v, nil
		}
	}
	v := r.NewValue()
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, v); err != nil {
		return nil, fmt.Errorf("%s value: %w", r.Keyword, err)
	}
	return v, nil
}

// decoder returns the pbjson decoder of the resource's type, nil if there is none.
func (r *DBResource) decoder() *pbjson.Decoder {
	if r.dec != nil {
		return r.dec
	}
	name := r.ValueType.ProtoReflect().Descriptor().FullName()
	for _, t := range table() {
		if t.ValueType.ProtoReflect().Descriptor().FullName() == name {
			return t.dec
		}
	}
	return nil
}

// Marshal encodes a resource value the way it is stored in etcd: protobuf JSON with
// lowerCamelCase field names and zero values omitted, as Ligato's JSON serializer did.
func Marshal(value proto.Message) ([]byte, error) {
	if value == nil {
		return nil, fmt.Errorf("marshal: nil value")
	}
	data, err := protojson.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", proto.MessageName(value), err)
	}
	return data, nil
}

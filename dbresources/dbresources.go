// Package dbresources is the table of the Kubernetes-state resources that contiv-agent
// reads from etcd under ksrkey.KsrPrefix: for each one its keyword (the key of
// api.KubeStateData), its key prefix (relative to the KSR prefix) and the protobuf type
// of its values. It also fixes how those values are encoded in etcd (protobuf JSON, as
// the Ligato etcd broker of upstream Contiv-VPP wrote them), so writers (contiv-ksr,
// nodesync, the standalone loader) and readers (dbwatcher) agree.
//
// It does not talk to etcd and does not cover the external configuration under
// /vnf-agent/<node>/ (vpp-agent model keys, decoded by api/models).
package dbresources

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/model/endpoints"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/model/namespace"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/model/node"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/model/nodeconfig"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/model/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/model/policy"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/model/service"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/model/vppnode"
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
}

// GetDBResources returns the resources the agent watches, in the upstream order:
// vppnode, nodeconfig, node, pod, namespace, policy, service, endpoints. Every call
// returns new values, so callers may keep or change them.
func GetDBResources() []*DBResource {
	return []*DBResource{
		{Keyword: vppnode.Keyword, KeyPrefix: vppnode.KeyPrefix(), ValueType: &vppnode.VppNode{}},
		{Keyword: nodeconfig.Keyword, KeyPrefix: nodeconfig.KeyPrefix(), ValueType: &nodeconfig.NodeConfig{}},
		{Keyword: node.Keyword, KeyPrefix: node.KeyPrefix(), ValueType: &node.Node{}},
		{Keyword: pod.Keyword, KeyPrefix: pod.KeyPrefix(), ValueType: &pod.Pod{}},
		{Keyword: namespace.Keyword, KeyPrefix: namespace.KeyPrefix(), ValueType: &namespace.Namespace{}},
		{Keyword: policy.Keyword, KeyPrefix: policy.KeyPrefix(), ValueType: &policy.Policy{}},
		{Keyword: service.Keyword, KeyPrefix: service.KeyPrefix(), ValueType: &service.Service{}},
		{Keyword: endpoints.Keyword, KeyPrefix: endpoints.KeyPrefix(), ValueType: &endpoints.Endpoints{}},
	}
}

// GetResourceByKey returns the resource a key belongs to; the key is relative to
// ksrkey.KsrPrefix (e.g. "k8s/pod/web/namespace/default"). ok is false for keys of no
// known resource, including a bare prefix without an identifier.
func GetResourceByKey(key string) (res *DBResource, ok bool) {
	for _, r := range GetDBResources() {
		if len(key) > len(r.KeyPrefix) && strings.HasPrefix(key, r.KeyPrefix) {
			return r, true
		}
	}
	return nil, false
}

// Keywords returns the keywords of every resource, in the order of GetDBResources; it is
// what api.NewKubeStateData takes.
func Keywords() []string {
	res := GetDBResources()
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
func (r *DBResource) Unmarshal(data []byte) (proto.Message, error) {
	v := r.NewValue()
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, v); err != nil {
		return nil, fmt.Errorf("%s value: %w", r.Keyword, err)
	}
	return v, nil
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

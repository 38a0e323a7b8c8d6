package standalone

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/convert"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/store"
)

// DefaultClusterPollInterval is how often the cluster file is checked for changes.
const DefaultClusterPollInterval = time.Second

// clusterPrefixes are the etcd prefixes the cluster file owns: each is made equal to
// the file (mark and sweep). Node IDs and node configuration are not among them. The
// slices go before the legacy endpoints, as contiv-ksr resyncs them.
var clusterPrefixes = []string{
	namespace.KeyPrefix(), node.KeyPrefix(), pod.KeyPrefix(), policy.KeyPrefix(),
	service.KeyPrefix(), servicecidr.KeyPrefix(), endpointslice.KeyPrefix(), endpoints.KeyPrefix(),
}

// clusterLoader keeps etcd equal to a file of Kubernetes objects, as contiv-ksr keeps it
// equal to a cluster: the same conversion (plugins/ksr/convert) and the same writer
// (plugins/ksr/store, so deleted nodes lose their ID and agent configuration too).
// Like contiv-ksr with its default -legacy-endpoints, it writes both forms of a
// service's endpoints (convert.Snapshot): EndpointSlices, and the legacy Endpoints
// value; an Endpoints object of the file is also mirrored into slices, so the demo
// serves agents that read either.
//
// A file with any error (unparsable YAML, an object that cannot be decoded or
// converted, a duplicate) is rejected as a whole: every error is logged with the
// document and object it concerns, and etcd keeps the state of the last good file.
// Objects of kinds that are not reflected (Deployments, ConfigMaps, ...) are skipped
// with a warning.
type clusterLoader struct {
	path   string
	log    logrus.FieldLogger
	kv     clientv3.KV
	writer *store.Writer
	codecs serializer.CodecFactory

	seen      fileStamp // of the file at the last check
	loaded    fileStamp // of the file last read
	lastSum   [sha256.Size]byte
	haveSum   bool // lastSum is the content of the file last read
	applyFail bool // the last apply failed: retry even if the file is unchanged
}

type fileStamp struct {
	mtime time.Time
	size  int64
}

func newClusterLoader(path string, kv clientv3.KV, log logrus.FieldLogger) *clusterLoader {
	return &clusterLoader{
		path:   path,
		log:    log.WithField("cluster-file", path),
		kv:     kv,
		writer: store.New(store.Options{KV: kv, Log: log}),
		codecs: serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict),
	}
}

// run checks the file every interval until ctx is done.
func (l *clusterLoader) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.check(ctx)
		}
	}
}

// check reloads the file once its modification time or size changed and then stayed
// the same for one more check (editors may truncate and write a file in steps; a
// half-written file must not be applied), or when the last apply failed. It returns
// the error of the reload, if any (already logged).
func (l *clusterLoader) check(ctx context.Context) error {
	fi, err := os.Stat(l.path)
	if err != nil {
		if l.seen != (fileStamp{}) {
			l.log.WithError(err).Error("cluster file unreadable: keeping the state loaded last")
			l.seen, l.loaded = fileStamp{}, fileStamp{}
		}
		return err
	}
	stamp := fileStamp{mtime: fi.ModTime(), size: fi.Size()}
	if stamp != l.seen {
		l.seen = stamp
		return nil
	}
	if stamp == l.loaded && !l.applyFail {
		return nil
	}
	l.loaded = stamp
	return l.reload(ctx)
}

// load reads the file now, without waiting for it to settle (at start).
func (l *clusterLoader) load(ctx context.Context) error {
	fi, err := os.Stat(l.path)
	if err != nil {
		return fmt.Errorf("cluster file: %w", err)
	}
	l.seen = fileStamp{mtime: fi.ModTime(), size: fi.Size()}
	l.loaded = l.seen
	return l.reload(ctx)
}

// reload reads, parses and applies the file.
func (l *clusterLoader) reload(ctx context.Context) error {
	data, err := os.ReadFile(l.path)
	if err != nil {
		l.log.WithError(err).Error("cluster file unreadable: keeping the state loaded last")
		return fmt.Errorf("cluster file %s: %w", l.path, err)
	}
	sum := sha256.Sum256(data)
	if l.haveSum && sum == l.lastSum && !l.applyFail {
		return nil // touched, not changed
	}
	l.lastSum, l.haveSum = sum, true
	desired, nodes, errs := l.parse(data)
	if len(errs) > 0 {
		for _, e := range errs {
			l.log.Error(e)
		}
		l.log.WithField("errors", len(errs)).Error("cluster file rejected: keeping the state loaded last")
		l.applyFail = false
		return fmt.Errorf("cluster file %s: %w", l.path, errors.Join(errs...))
	}
	if err := l.apply(ctx, desired, nodes); err != nil {
		if ctx.Err() != nil {
			return err // closing
		}
		l.applyFail = true
		l.log.WithError(err).Error("cluster file not fully applied: retrying")
		return err
	}
	l.applyFail = false
	return nil
}

// document is one YAML document of the file.
type document struct {
	index int // 1-based, counting documents with content only
	line  int // first line
	data  []byte
}

func (d document) String() string { return fmt.Sprintf("document %d (line %d)", d.index, d.line) }

// splitDocuments splits a multi-document YAML file at its "---" lines.
func splitDocuments(data []byte) []document {
	var docs []document
	cur := document{index: 1, line: 1}
	var buf bytes.Buffer
	lines := strings.SplitAfter(string(data), "\n")
	for i, ln := range lines {
		trimmed := strings.TrimRight(ln, " \t\r\n")
		if trimmed == "---" || strings.HasPrefix(trimmed, "--- ") || strings.HasPrefix(trimmed, "---\t") {
			cur.data = append([]byte(nil), buf.Bytes()...)
			docs = append(docs, cur)
			buf.Reset()
			cur = document{index: cur.index + 1, line: i + 2}
			continue
		}
		buf.WriteString(ln)
	}
	cur.data = buf.Bytes()
	docs = append(docs, cur)
	// Drop empty documents (a leading "---", comments only) and number the others.
	out := docs[:0]
	for _, d := range docs {
		if hasContent(d.data) {
			d.index = len(out) + 1
			out = append(out, d)
		}
	}
	return out
}

func hasContent(data []byte) bool {
	for _, ln := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(ln)
		if t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}

// identify names the object of a document as well as the document allows, for errors.
func identify(data []byte) string {
	var head struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if yaml.Unmarshal(data, &head) != nil || head.Kind == "" {
		return ""
	}
	name := head.Metadata.Name
	if head.Metadata.Namespace != "" {
		name = head.Metadata.Namespace + "/" + name
	}
	if name == "" {
		return head.Kind
	}
	return head.Kind + " " + name
}

// VPPIPAnnotation, set on a Node of the cluster file, gives the VPP addresses (CIDRs,
// comma-separated) that the standalone loader publishes in the node's ID allocation
// when it creates it. It stands in for the agent of a node that does not run, so that
// the local agent connects to it (VXLAN tunnel, routes to its pod subnet). The agent
// of the local node publishes its own addresses over it.
const VPPIPAnnotation = "standalone.contivpp.io/vpp-ip-addresses"

// fileNode is a Node of the cluster file, for the node ID allocation.
type fileNode struct {
	name   string
	vppIPs []string
}

// parse decodes and converts the file. nodes lists the Nodes in file order.
func (l *clusterLoader) parse(data []byte) (desired map[string]proto.Message, nodes []fileNode, errs []error) {
	defer func() {
		// Whatever the file holds must not take the agent down.
		if r := recover(); r != nil {
			errs = append(errs, fmt.Errorf("cluster file could not be decoded: %v", r))
		}
	}()
	decoder := l.codecs.UniversalDeserializer()
	var objs []runtime.Object
	for _, doc := range splitDocuments(data) {
		where := doc.String()
		if id := identify(doc.data); id != "" {
			where += " " + id
		}
		decoded, err := l.decode(decoder, doc.data, where)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs = append(objs, decoded...)
	}
	for _, obj := range objs {
		n, ok := obj.(*corev1.Node)
		if !ok {
			continue
		}
		fn := fileNode{name: n.Name}
		if v := n.Annotations[VPPIPAnnotation]; v != "" {
			for _, a := range strings.Split(v, ",") {
				a = strings.TrimSpace(a)
				if _, _, err := net.ParseCIDR(a); err != nil {
					errs = append(errs, fmt.Errorf("node %s: annotation %s: %q is not an address with a prefix length (192.168.16.2/24)",
						n.Name, VPPIPAnnotation, a))
					continue
				}
				fn.vppIPs = append(fn.vppIPs, a)
			}
		}
		nodes = append(nodes, fn)
	}
	desired, err := convert.Snapshot(objs)
	if err != nil {
		errs = append(errs, err)
	}
	return desired, nodes, errs
}

// decode decodes one document (a List is decoded item by item); objects of kinds that
// are not reflected are skipped with a warning.
func (l *clusterLoader) decode(decoder runtime.Decoder, data []byte, where string) ([]runtime.Object, error) {
	obj, gvk, err := decoder.Decode(data, nil, nil)
	switch {
	case err != nil && runtime.IsNotRegisteredError(err):
		l.log.WithField("object", where).Warn("kind unknown to Kubernetes' built-in types: skipped")
		return nil, nil
	case err != nil && runtime.IsStrictDecodingError(err) && obj != nil:
		// Unknown or duplicate fields: most likely a typo; say so but use the object.
		l.log.WithField("object", where).WithError(err).Warn("fields ignored")
	case err != nil:
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if list, ok := obj.(*corev1.List); ok {
		var out []runtime.Object
		var errs []error
		for i, item := range list.Items {
			itemWhere := fmt.Sprintf("%s item %d", where, i)
			if id := identify(item.Raw); id != "" {
				itemWhere += " " + id
			}
			objs, err := l.decode(decoder, item.Raw, itemWhere)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, objs...)
		}
		return out, errors.Join(errs...)
	}
	if !convert.Supported(obj) {
		kind := ""
		if gvk != nil {
			kind = gvk.Kind
		}
		l.log.WithFields(logrus.Fields{"object": where, "kind": kind}).Warn("kind not reflected into etcd: skipped")
		return nil, nil
	}
	if acc, err := meta.Accessor(obj); err == nil && acc.GetNamespace() == "" && namespaced(obj) {
		acc.SetNamespace(corev1.NamespaceDefault) // as kubectl apply does
	}
	return []runtime.Object{obj}, nil
}

// namespaced says whether objects of obj's kind live in a namespace.
func namespaced(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Node, *corev1.Namespace:
		return false
	}
	return true
}

// apply writes the desired state prefix by prefix, then gives the file's nodes IDs.
func (l *clusterLoader) apply(ctx context.Context, desired map[string]proto.Message, nodes []fileNode) error {
	var total store.Stats
	counts := map[string]int{}
	for _, prefix := range clusterPrefixes {
		part := map[string]proto.Message{}
		for k, v := range desired {
			if strings.HasPrefix(k, prefix) {
				part[k] = v
			}
		}
		counts[strings.TrimSuffix(strings.TrimPrefix(prefix, "k8s/"), "/")] = len(part)
		st, err := l.writer.Resync(ctx, prefix, part)
		if err != nil {
			return fmt.Errorf("write %s: %w", prefix, err)
		}
		total.Added += st.Added
		total.Updated += st.Updated
		total.Deleted += st.Deleted
	}
	if err := l.allocateNodeIDs(ctx, nodes); err != nil {
		return err
	}
	fields := logrus.Fields{"added": total.Added, "updated": total.Updated, "deleted": total.Deleted}
	for k, n := range counts {
		fields[k] = n
	}
	l.log.WithFields(fields).Info("cluster file applied")
	return nil
}

// allocateNodeIDs gives every node of the file that has none the smallest free node ID,
// in file order, as the agent of that node would have done on start (put-if-absent,
// like nodesync). So the address plan of the file holds whichever node the local agent
// runs as: the first node gets ID 1 and pod subnet 10.1.1.0/24, the second ID 2, ...
// The new record carries the VPP addresses of the node's VPPIPAnnotation. Existing
// allocations are never changed.
func (l *clusterLoader) allocateNodeIDs(ctx context.Context, nodes []fileNode) error {
	for attempt := 0; attempt < 10; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, store.DefaultOpTimeout)
		resp, err := l.kv.Get(rctx, ksrkey.KsrPrefix+vppnode.KeyPrefix(), clientv3.WithPrefix())
		cancel()
		if err != nil {
			return fmt.Errorf("list node IDs: %w", err)
		}
		taken := map[uint32]bool{}
		named := map[string]bool{}
		for _, kv := range resp.Kvs {
			id, err := vppnode.ParseVppNodeFromKey(strings.TrimPrefix(string(kv.Key), ksrkey.KsrPrefix))
			if err != nil {
				continue
			}
			taken[id] = true
			if res, ok := dbresources.GetResourceByKey(vppnode.Key(id)); ok {
				if v, err := res.Unmarshal(kv.Value); err == nil {
					if rec, ok := v.(*vppnode.VppNode); ok {
						named[rec.GetName()] = true
					}
				}
			}
		}
		conflict := false
		next := uint32(1)
		for _, n := range nodes {
			name := n.name
			if named[name] {
				continue
			}
			for taken[next] {
				next++
			}
			rec := &vppnode.VppNode{Id: next, Name: name, IpAddresses: n.vppIPs}
			data, err := dbresources.Marshal(rec)
			if err != nil {
				return fmt.Errorf("node %s: %w", name, err)
			}
			key := ksrkey.KsrPrefix + vppnode.Key(next)
			rctx, cancel := context.WithTimeout(ctx, store.DefaultOpTimeout)
			txn, err := l.kv.Txn(rctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
				Then(clientv3.OpPut(key, string(data))).Commit()
			cancel()
			if err != nil {
				return fmt.Errorf("node %s: claim %s: %w", name, key, err)
			}
			if !txn.Succeeded {
				conflict = true // an agent claimed it meanwhile: list again
				break
			}
			taken[next], named[name] = true, true
			l.log.WithFields(logrus.Fields{"node": name, "nodeID": next}).Info("node ID allocated for a node of the cluster file")
		}
		if !conflict {
			return nil
		}
	}
	return fmt.Errorf("node ID allocation: conflicts persisted after 10 attempts")
}

package nodesync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// DB gives nodesync the etcd connection; dbwatcher.DBWatcher implements it.
type DB interface {
	// KV returns the etcd key-value API, or an error while the database is not
	// connected.
	KV() (clientv3.KV, error)
}

// Deps lists what nodesync needs.
type Deps struct {
	// Log is the plugin's logger; nil means infra.LoggerOr's default.
	Log logrus.FieldLogger
	// NodeName is this node's name (required).
	NodeName string
	// DB is the etcd connection used to allocate the node ID and publish the node's
	// IPs; nil means no database (a node without an ID then cannot start).
	DB DB
	// EventLoop receives the NodeUpdate events (required).
	EventLoop api.EventLoop
	// IDFile is a small file in the agent's state directory where the node keeps its
	// ID, so that it knows the ID even when its etcd record is lost or corrupt; empty
	// disables it (the etcd record is then the only source).
	IDFile string
	// LeaseTTL is the TTL of the etcd lease under which the running node holds its ID
	// (holder.go); 0 means DefaultLeaseTTL. The lease is renewed every third of it.
	LeaseTTL time.Duration
	// Clock paces the lease renewals (nil: the real clock); tests inject a fake.
	Clock clock.Clock
	// Health receives the state of the node ID: OK, or DEGRADED while another running
	// node holds it (a conflict). Optional.
	Health *health.Reporter
	// Registerer receives the plugin's metrics; optional.
	Registerer prometheus.Registerer
}

// NodeSync is the plugin: an event handler of the controller and the provider of API.
// See the package documentation for the rules.
type NodeSync struct {
	Deps

	ctx    context.Context // canceled by Close: aborts etcd requests in flight
	cancel context.CancelFunc

	mu    sync.RWMutex
	state *cluster // replaced by Resync, changed by Update and PublishNodeIPs

	publishMu sync.Mutex // serialises PublishNodeIPs

	savedID uint32 // the ID in IDFile; touched by Init and Resync only (event loop)

	lastOwn *vppnode.VppNode // this node's record before it was seen deleted (guarded by mu)

	leaseMu  sync.Mutex
	lease    clientv3.LeaseID // this node's lease, 0 before granted or once expired
	conflict string           // the conflict over this node's ID reported last ("" none)
	kick     chan struct{}    // asks the holder for a round now
	wg       sync.WaitGroup   // the holder goroutine
	metrics  *metrics
}

var (
	_ API              = (*NodeSync)(nil)
	_ api.EventHandler = (*NodeSync)(nil)
)

// NewNodeSync returns the plugin with its dependencies set.
func NewNodeSync(deps Deps) *NodeSync { return &NodeSync{Deps: deps} }

// String names the plugin: "nodesync".
func (ns *NodeSync) String() string { return "nodesync" }

// Init checks the dependencies.
func (ns *NodeSync) Init() error {
	ns.Log = infra.LoggerOr(ns.Log, ns.String())
	if ns.NodeName == "" {
		return errors.New("nodesync: no node name given")
	}
	if ns.EventLoop == nil {
		return errors.New("nodesync: no event loop given")
	}
	if ns.Clock == nil {
		ns.Clock = clock.RealClock{}
	}
	ns.metrics = newMetrics()
	if ns.Registerer != nil {
		if err := ns.metrics.register(ns.Registerer); err != nil {
			return fmt.Errorf("nodesync: register metrics: %w", err)
		}
	}
	ns.ctx, ns.cancel = context.WithCancel(context.Background())
	ns.state = newCluster(ns.NodeName, ns.Log)
	ns.savedID = ns.loadIDFile()
	ns.report(health.OK, "")
	ns.kick = make(chan struct{}, 1)
	ns.wg.Add(1)
	go ns.runHolder()
	return nil
}

// Close stops the holder of the node ID, releases its lease (the allocatedIDs record
// keeps the ID allocated while the node is stopped) and aborts etcd requests in flight.
func (ns *NodeSync) Close() error {
	if ns.cancel != nil {
		ns.cancel()
	}
	ns.wg.Wait()
	ns.revokeLease()
	if ns.Registerer != nil && ns.metrics != nil {
		ns.metrics.unregister(ns.Registerer)
	}
	return nil
}

// HandlesEvent selects every resync and the KubeStateChanges of the "vppnode" and
// "node" resources.
func (ns *NodeSync) HandlesEvent(ev api.Event) bool {
	if ev.Method().IsResync() {
		return true
	}
	ksc, ok := ev.(*api.KubeStateChange)
	return ok && (ksc.Resource == vppnode.Keyword || ksc.Resource == node.Keyword)
}

// Resync rebuilds the node map from the Kubernetes state and allocates this node's ID
// when it has none. The ID the node knows (held so far, else remembered in the ID
// file) is confirmed in etcd when the snapshot does not give it to this node: a
// missing or corrupt record is rewritten, another node's record is a refusal
// (ErrIDTaken); the node never silently moves to another ID. At the start-up resync
// (resyncCount 1) a failed allocation or a refusal is an api.FatalError; later it is an
// ordinary error (the node keeps its ID meanwhile).
func (ns *NodeSync) Resync(_ api.Event, kubeState api.KubeStateData, resyncCount int, _ api.ResyncOperations) error {
	prevID := ns.GetNodeID()
	known := prevID
	if known == 0 {
		known = ns.savedID
	}
	c := buildCluster(ns.NodeName, kubeState[vppnode.Keyword], kubeState[node.Keyword], ns.Log)
	id := c.ownID(known)
	log := ns.Log.WithField("node", ns.NodeName)
	var resyncErr error
	switch {
	case id != 0 && id == prevID:
		log.WithField("nodeID", id).Debug("node ID found in the Kubernetes state")
	case id != 0 && (known == 0 || id == known):
		log.WithField("nodeID", id).Info("node ID found in the Kubernetes state")
	case known != 0:
		rec, err := ns.reclaim(known)
		if err != nil {
			if resyncCount == 1 || errors.Is(err, ErrIDTaken) && prevID == 0 {
				log.WithError(err).WithField("nodeID", known).Error("this node's ID cannot be confirmed at start-up")
				return api.NewFatalError(err)
			}
			log.WithError(err).WithField("nodeID", known).Warn("node ID not confirmed in etcd: keeping it")
			resyncErr = err
			id = known
			break
		}
		if id != 0 {
			log.WithFields(logrus.Fields{"nodeID": known, "otherID": id}).
				Warn("etcd also gives this node another ID: keeping the one it uses")
		}
		c.storeVppNode(known, rec)
		id = known
		log.WithField("nodeID", id).Info("node ID confirmed in etcd")
	default:
		rec, attempts, err := ns.allocate()
		if err != nil {
			if resyncCount == 1 {
				log.WithError(err).Error("node ID allocation failed at start-up")
				return api.NewFatalError(err)
			}
			log.WithError(err).Warn("node ID allocation failed")
			resyncErr = err
			break
		}
		c.storeVppNode(rec.GetId(), rec)
		id = rec.GetId()
		log.WithFields(logrus.Fields{"nodeID": id, "attempts": attempts}).Info("node ID allocated")
	}
	c.setThisID(id)
	if id != 0 {
		ns.kickHolder()
	}
	if err := ns.saveIDFile(id); err != nil {
		log.WithError(err).Error("node ID not saved: a lost etcd record could not be repaired after a restart")
		resyncErr = errors.Join(resyncErr, err)
	}

	ns.mu.Lock()
	ns.state = c
	ns.mu.Unlock()
	if resyncErr != nil {
		return fmt.Errorf("nodesync resync: %w", resyncErr)
	}
	return nil
}

// Update applies a KubeStateChange of a VppNode or a Kubernetes node to the node map
// and pushes the NodeUpdate events it calls for.
func (ns *NodeSync) Update(ev api.Event, txn api.UpdateOperations) (string, error) {
	ksc, ok := ev.(*api.KubeStateChange)
	if !ok {
		return "", nil
	}
	var changes []nodeChange
	ns.mu.Lock()
	switch ksc.Resource {
	case vppnode.Keyword:
		if id, rec, valid := ns.state.vppNodeRecord(ksc.Key, ksc.NewValue); valid {
			if ns.state.thisID != 0 && id == ns.state.thisID && rec != nil && rec.GetName() != ns.NodeName {
				ns.Log.WithFields(logrus.Fields{"node": ns.NodeName, "nodeID": id, "otherNode": rec.GetName()}).
					Error("another node wrote a VppNode under this node's ID")
			}
			if ns.state.thisID != 0 && id == ns.state.thisID && rec == nil {
				ns.Log.WithFields(logrus.Fields{"node": ns.NodeName, "nodeID": id}).
					Warn("this node's VppNode was deleted: the node keeps its ID and re-creates the record")
				if own := ns.state.ownRecord(); own != nil {
					ns.lastOwn = own // its IPs go into the re-created record
				}
				ns.kickHolder()
			}
			changes = ns.state.applyVppNode(id, rec)
		}
	case node.Keyword:
		if name, rec, valid := ns.state.k8sNodeRecord(ksc.Key, ksc.NewValue); valid {
			changes = ns.state.applyK8sNode(name, rec)
		}
	}
	ns.mu.Unlock()

	var done []string
	for _, ch := range changes {
		upd := nodeUpdateFor(ch, ns.NodeName)
		if upd == nil {
			continue
		}
		if err := api.PushFollowUp(txn, ns.EventLoop, upd); err != nil {
			return strings.Join(done, "; "), fmt.Errorf("nodesync: push %s for node %s: %w", NodeUpdateName, ch.name, err)
		}
		ns.Log.WithField("node", ch.name).Debugf("%s pushed: %s", NodeUpdateName, upd.describe())
		done = append(done, upd.describe())
	}
	return strings.Join(done, "; "), nil
}

// Revert does nothing: nodesync handles no RevertOnFailure events.
func (ns *NodeSync) Revert(api.Event) error { return nil }

// GetNodeID returns this node's ID, 0 before the first successful resync.
func (ns *NodeSync) GetNodeID() uint32 {
	ns.mu.RLock()
	defer ns.mu.RUnlock()
	if ns.state == nil {
		return 0
	}
	return ns.state.thisID
}

// GetAllNodes returns copies of the nodes that have an ID, by name.
func (ns *NodeSync) GetAllNodes() map[string]*Node {
	ns.mu.RLock()
	defer ns.mu.RUnlock()
	out := make(map[string]*Node)
	if ns.state == nil {
		return out
	}
	for name, n := range ns.state.nodes {
		if n.ID != 0 {
			out[name] = n.clone()
		}
	}
	return out
}

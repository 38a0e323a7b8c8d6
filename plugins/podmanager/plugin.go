package podmanager

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"k8s.io/utils/clock"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// ErrObsoletePod is the error of an AddPod for a pod that the pod manager still has with
// another container ID or network namespace: the old sandbox must be deleted first. The
// CNI server does that (a DeletePod, waited for) and adds the pod again.
var ErrObsoletePod = errors.New("the pod is still connected with another sandbox")

// ErrContainerInUse is the error of an AddPod whose sandbox container ID is bound to
// another local pod: a container ID belongs to one pod until that pod is deleted.
var ErrContainerInUse = errors.New("container ID in use")

// ErrOtherIfName is the error of an AddPod for a pod connected with the same sandbox
// under another interface name: the agent wires one interface per pod, and a second
// attachment must not replace the first one.
var ErrOtherIfName = errors.New("the pod is connected with this sandbox under another interface name")

// gracefulStopTimeout bounds how long Close lets running CNI requests finish.
const gracefulStopTimeout = 5 * time.Second

// NodeSync is the part of nodesync the pod manager uses: the nodes' management IPs, to
// tell whether a recovered pod still runs on this node.
type NodeSync interface {
	// GetAllNodes returns the cluster's nodes that have an ID, by name.
	GetAllNodes() map[string]*nodesync.Node
}

// StatusReporter receives a component's health; *health.Reporter implements it.
type StatusReporter interface {
	Report(state health.State, reason string)
}

// Deps lists what the plugin needs.
type Deps struct {
	// Log receives the plugin's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// Config loads podmanager.conf (see Config); nil means the defaults.
	Config infra.ConfigLoader
	// EventLoop receives the AddPod and DeletePod events. Required.
	EventLoop api.EventLoop
	// NodeName is this node's name; with NodeSync it lets the first resync drop
	// recovered pods that Kubernetes runs on another node. Optional.
	NodeName string
	// NodeSync provides this node's management IPs. Optional.
	NodeSync NodeSync
	// Registerer receives the plugin's metrics. Optional.
	Registerer prometheus.Registerer
	// Status receives the plugin's health: not ready while the local pods cannot be
	// persisted (the reason names the state file and the error). Optional.
	Status StatusReporter
	// CheckPodWiring, when set, makes CNI CHECK verify that the pod's network is in place
	// (ipnet's CheckPodWiring does); without it CHECK only checks that the pod is known.
	CheckPodWiring func(pod podmodel.ID) error
	// Clock gives the pods' ADD times and the time sync markers are checked against;
	// nil means the real clock.
	Clock clock.PassiveClock
}

// Plugin is the pod manager: the Remote CNI server and the event handler that keeps the
// local pods (see the package documentation).
type Plugin struct {
	Deps

	config  Config
	metrics *metrics

	mu   sync.RWMutex
	pods map[podmodel.ID]*podRecord
	// state persists pods; nil without Config.StateFile.
	state *stateStore
	// Owned by the event loop goroutine (and guarded by mu as well).
	lastAdd     *AddPod    // the last AddPod handled, for Revert
	lastAddPrev *podRecord // the record lastAdd replaced (nil: none)
	// unconfirmed are the local pods the Kubernetes state lacks or shows on another
	// node, without proof that they are gone (see unconfirmed.go).
	unconfirmed map[podmodel.ID]*unconfirmedPod
	// completeAsOf is the time of contiv-ksr's last pod sync marker (zero: none).
	completeAsOf time.Time
	// undurableForgets are the pods deleted while the state file could not be written,
	// by pod, with their container ID: their DEL is answered "try again" until a write
	// succeeds (the first one after a failure is a snapshot, which covers them).
	undurableForgets map[podmodel.ID]string
	// stateFailing is set while the last write of the state file failed.
	stateFailing bool

	locks      podLocks
	listener   net.Listener
	server     *grpc.Server
	serving    bool
	closing    chan struct{}
	closeOnce  sync.Once
	serveDone  chan struct{}
	registered bool

	// Replaced by tests that run without network namespaces.
	checkNetns func(path string, inode uint64) (netnsVerdict, string)
	// isAgentNetns tells whether a path names the agent's (the node's) own namespace.
	isAgentNetns func(path string) bool
	netnsInode   func(path string) uint64
}

var (
	_ API              = (*Plugin)(nil)
	_ api.EventHandler = (*Plugin)(nil)
)

// NewPlugin returns the plugin with its dependencies set.
func NewPlugin(deps Deps) *Plugin { return &Plugin{Deps: deps} }

// String names the plugin.
func (p *Plugin) String() string { return "podmanager" }

// Init loads the configuration, recovers the local pods of the previous agent from the
// state file (dropping those whose network namespace is gone) and opens the Remote CNI
// socket. Requests are served from AfterInit on.
func (p *Plugin) Init() error {
	p.Log = infra.LoggerOr(p.Log, p.String())
	if p.EventLoop == nil {
		return errors.New("podmanager: Deps.EventLoop is required")
	}
	if p.isAgentNetns == nil {
		p.isAgentNetns = isAgentNetns
	}
	if p.checkNetns == nil {
		p.checkNetns = checkNetns
	}
	if p.netnsInode == nil {
		p.netnsInode = netnsInode
	}
	if p.Clock == nil {
		p.Clock = clock.RealClock{}
	}
	p.config = DefaultConfig()
	if p.Config != nil {
		if _, err := p.Config.LoadConfig(&p.config); err != nil {
			return fmt.Errorf("podmanager: %w", err)
		}
	}
	if err := p.config.Validate(); err != nil {
		return fmt.Errorf("podmanager config: %w", err)
	}
	p.metrics = newMetrics()
	if p.Registerer != nil {
		if err := p.metrics.register(p.Registerer); err != nil {
			return fmt.Errorf("podmanager metrics: %w", err)
		}
		p.registered = true
	}
	p.closing = make(chan struct{})
	p.serveDone = make(chan struct{})

	p.reportStatus(health.OK, "")
	p.recoverPods()

	lis, err := listenUnix(p.config.SocketPath, p.Log)
	if err != nil {
		p.unregisterMetrics()
		return fmt.Errorf("podmanager: %w", err)
	}
	p.listener = lis
	p.server = grpc.NewServer()
	cni.RegisterRemoteCNIServer(p.server, &cniServer{p: p})
	p.Log.WithFields(logrus.Fields{
		"socket": p.config.SocketPath, "stateFile": p.config.StateFile,
		"requestTimeout": time.Duration(p.config.RequestTimeout).String(),
	}).Info("podmanager initialised")
	return nil
}

// AfterInit starts serving CNI requests. Requests that come before the controller's
// start-up resync wait for it (the controller parks their events).
func (p *Plugin) AfterInit() error {
	if p.server == nil {
		return errors.New("podmanager: AfterInit before Init")
	}
	p.serving = true
	go func() {
		defer close(p.serveDone)
		if err := p.server.Serve(p.listener); err != nil {
			p.Log.WithError(err).Error("Remote CNI server stopped")
		}
	}()
	p.Log.WithField("socket", p.config.SocketPath).Info("serving Remote CNI requests")
	return nil
}

// Close stops the server: waiting requests are answered with codes.Unavailable at once,
// running ones get a few seconds to finish; the socket file is removed.
func (p *Plugin) Close() error {
	p.closeOnce.Do(func() {
		if p.closing != nil {
			close(p.closing)
		}
		if p.server == nil {
			return
		}
		if p.serving {
			stopped := make(chan struct{})
			go func() {
				p.server.GracefulStop()
				close(stopped)
			}()
			select {
			case <-stopped:
			case <-time.After(gracefulStopTimeout):
				p.server.Stop()
				<-stopped
			}
			<-p.serveDone
		} else {
			p.server.Stop()
			_ = p.listener.Close()
		}
		if err := os.Remove(p.config.SocketPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			p.Log.WithError(err).Warn("cannot remove the Remote CNI socket")
		}
		p.mu.Lock()
		if p.state != nil {
			p.state.close()
		}
		p.mu.Unlock()
		p.unregisterMetrics()
	})
	return nil
}

func (p *Plugin) unregisterMetrics() {
	if p.registered {
		p.metrics.unregister(p.Registerer)
		p.registered = false
	}
}

// listenUnix opens the unix socket at path: it creates the directory, removes a socket
// file left by a previous process (never anything else) and makes the socket accessible
// to root only.
func listenUnix(path string, log logrus.FieldLogger) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("socket %s: the path exists and is not a socket (%v)", path, fi.Mode().Type())
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
		log.WithField("socket", path).Info("removed the stale Remote CNI socket of a previous agent")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o700); err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return lis, nil
}

// recoverPods loads the local pods persisted by the previous agent and keeps those whose
// network namespace still exists; the first resync checks them against Kubernetes.
func (p *Plugin) recoverPods() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods = make(map[podmodel.ID]*podRecord)
	p.unconfirmed = make(map[podmodel.ID]*unconfirmedPod)
	p.undurableForgets = make(map[podmodel.ID]string)
	if p.config.StateFile == "" {
		p.Log.Info("no stateFile configured: local pods are not recovered after a restart")
		return
	}
	p.state = &stateStore{path: p.config.StateFile}
	load, err := readState(p.config.StateFile)
	if err != nil {
		// Keep the bad file for a post-mortem and start afresh.
		aside := p.config.StateFile + ".bad"
		if rerr := os.Rename(p.config.StateFile, aside); rerr != nil {
			aside = ""
		}
		p.Log.WithError(err).WithField("keptAs", aside).Warn("pod state unreadable: recovering the local pods from the runtime's CNI cache only")
		p.recoverFromCNICacheLocked()
		p.stampAddTimesLocked()
		p.snapshotLocked()
		return
	}
	if load.TornTail != "" {
		p.Log.WithFields(logrus.Fields{"stateFile": p.config.StateFile, "replayed": load.Entries, "tail": load.TornTail}).
			Warn("pod state ends in an unreadable change (an interrupted write); the changes before it were recovered")
	}
	dropped := 0
	for i := range load.Pods {
		r := load.Pods[i]
		log := p.Log.WithFields(logrus.Fields{
			"pod": r.id().String(), "container": r.ContainerID, "netns": r.NetworkNamespace,
		})
		verdict, reason := p.checkNetns(r.NetworkNamespace, r.NetnsInode)
		switch verdict {
		case netnsGone:
			log.WithField("reason", reason).Info("recovered pod dropped: its network namespace is gone")
			dropped++
			continue
		case netnsUnknown:
			log.WithField("reason", reason).Warn("recovered pod kept, its network namespace could not be examined")
		default:
			log.Info("pod recovered")
		}
		p.pods[r.id()] = &r
	}
	fromCache := p.recoverFromCNICacheLocked()
	p.stampAddTimesLocked()
	p.Log.WithFields(logrus.Fields{"recovered": len(p.pods), "dropped": dropped, "fromCNICache": fromCache}).Info("local pods recovered")
	// A fresh snapshot: the journal starts empty, a torn tail is gone, the file is in
	// the current format.
	p.snapshotLocked()
}

// recoverFromCNICacheLocked adds the pods of the runtime's CNI cache (Config.CNICacheDir)
// that the state file lacks and whose network namespace still exists: a state file
// that lost writes (a full disk) or was removed must not make the agent delete running
// pods' interfaces or give their IPs away. A pod the state file has, or whose container
// ID another local pod holds, is left as recorded. p.mu is held; it returns how many
// pods were recovered.
func (p *Plugin) recoverFromCNICacheLocked() int {
	dir := p.config.CNICacheDir
	if dir == "" {
		return 0
	}
	cached, skipped, err := cachedPods(dir, p.config.SocketPath)
	if err != nil {
		p.Log.WithError(err).Warn("runtime's CNI cache unreadable: pods missing from the state file are not recovered")
		return 0
	}
	if skipped > 0 {
		p.Log.WithFields(logrus.Fields{"dir": dir, "skipped": skipped}).Debug("unusable entries in the runtime's CNI cache")
	}
	inUse := make(map[string]bool, len(p.pods))
	for _, r := range p.pods {
		inUse[r.ContainerID] = true
	}
	recovered := 0
	for i := range cached {
		r := cached[i]
		if p.pods[r.id()] != nil || inUse[r.ContainerID] {
			continue
		}
		log := p.Log.WithFields(logrus.Fields{"pod": r.id().String(), "container": r.ContainerID, "netns": r.NetworkNamespace, "ip": r.IPAddress})
		if verdict, reason := p.checkNetns(r.NetworkNamespace, 0); verdict == netnsGone {
			log.WithField("reason", reason).Debug("pod of the CNI cache not recovered: its network namespace is gone")
			continue
		}
		r.NetnsInode = p.netnsInode(r.NetworkNamespace)
		p.pods[r.id()] = &r
		inUse[r.ContainerID] = true
		recovered++
		log.Warn("pod missing from the state file recovered from the runtime's CNI cache")
	}
	return recovered
}

// stampAddTimesLocked gives the recovered pods without an ADD time (recorded by an older
// agent, or found in the runtime's CNI cache) the time of their recovery: their ADD
// happened before it, so a sync marker newer than it proves them gone as well. p.mu is
// held.
func (p *Plugin) stampAddTimesLocked() {
	now := p.Clock.Now()
	for _, r := range p.pods {
		if r.AddedAt.IsZero() {
			r.AddedAt = now
		}
	}
}

// snapshotLocked rewrites the state file with all local pods; p.mu is held.
func (p *Plugin) snapshotLocked() {
	p.metrics.localPods.Set(float64(len(p.pods)))
	if p.state != nil {
		_ = p.stateWritten(p.state.snapshot(p.pods))
	}
}

// recordLocked persists the record of id (now in p.pods) or, when it has none, its
// removal; p.mu is held. The error is that of a change that is not durable (a failed
// compaction, after which the change is in the journal, is no error).
func (p *Plugin) recordLocked(id podmodel.ID) error {
	p.metrics.localPods.Set(float64(len(p.pods)))
	if p.state == nil {
		return nil
	}
	if r := p.pods[id]; r != nil {
		return p.stateWritten(p.state.record(r, p.pods))
	}
	return p.stateWritten(p.state.forget(id, p.pods))
}

// stateWritten reports the outcome of a write of the state file: a failure is logged,
// counted and makes the agent not ready (the reason names the file and the error) until
// a write succeeds. It returns the error when the change is not durable.
func (p *Plugin) stateWritten(err error) error {
	if err == nil || errors.Is(err, errCompaction) {
		clear(p.undurableForgets) // the change is durable, and so is everything before it
	}
	switch {
	case err == nil:
		if p.stateFailing {
			p.stateFailing = false
			p.Log.WithField("stateFile", p.config.StateFile).Info("local pods persisted again")
		}
		p.reportStatus(health.OK, "")
		return nil
	case errors.Is(err, errCompaction):
		p.metrics.stateWriteErrors.Inc()
		p.Log.WithError(err).Warn("pod state recorded, but not compacted: its journal grows until a compaction succeeds")
		return nil
	default:
		p.metrics.stateWriteErrors.Inc()
		p.stateFailing = true
		p.Log.WithError(err).Error("cannot persist the local pods: CNI ADDs fail until the state file is writable")
		p.reportStatus(health.Init, fmt.Sprintf("local pods cannot be persisted in %s (CNI ADDs fail and are reverted): %v",
			p.config.StateFile, err))
		return err
	}
}

// reportStatus passes the plugin's health on to Deps.Status, when set.
func (p *Plugin) reportStatus(state health.State, reason string) {
	if p.Status != nil {
		p.Status.Report(state, reason)
	}
}

// GetLocalPods returns copies of the pods connected on this node, by pod ID.
func (p *Plugin) GetLocalPods() LocalPods {
	p.mu.RLock()
	defer p.mu.RUnlock()
	pods := make(LocalPods, len(p.pods))
	for id, r := range p.pods {
		pods[id] = r.localPod()
	}
	return pods
}

// localPod returns a copy of one local pod (nil when unknown).
func (p *Plugin) localPod(id podmodel.ID) *podRecord {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if r := p.pods[id]; r != nil {
		c := *r
		return &c
	}
	return nil
}

// localPodByContainer returns a copy of the local pod with the sandbox container (nil
// when none).
func (p *Plugin) localPodByContainer(containerID string) *podRecord {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, r := range p.pods {
		if r.ContainerID == containerID {
			c := *r
			return &c
		}
	}
	return nil
}

// HandlesEvent selects every resync and the AddPod and DeletePod events.
func (p *Plugin) HandlesEvent(ev api.Event) bool {
	if ev.Method() != api.Update {
		return true
	}
	switch e := ev.(type) {
	case *AddPod, *DeletePod:
		return true
	case *api.KubeStateChange:
		return isDecisive(e)
	}
	return false
}

// Resync settles the local pods against the Kubernetes state. The local pods are what
// CNI told this agent (and the previous one, recovered at Init), so a resync keeps
// them, also those that Kubernetes' copy lacks or shows on another node: that copy may
// be stale (contiv-ksr down, between leaders, lagging, etcd down and the bolt mirror in
// use). Such a pod is dropped only when contiv-ksr's sync marker proves the copy
// complete as of a time after the pod's ADD (see kubeView.judge); the others keep
// their wiring and IP, logged at warning with the reason at every resync, until their
// CNI DEL or a resync whose state proves them gone.
func (p *Plugin) Resync(ev api.Event, kubeStateData api.KubeStateData, resyncCount int, _ api.ResyncOperations) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastAdd, p.lastAddPrev = nil, nil
	view := newKubeView(kubeStateData, p.thisNodeIPs(), time.Duration(p.config.MaxClockSkew), p.Clock.Now())
	if view.pods == nil {
		p.Log.WithField("event", ev.GetName()).Warn("resync without Kubernetes pod state: local pods kept unchecked")
		return nil
	}
	p.completeAsOf = view.completeAsOf
	p.unconfirmed = make(map[podmodel.ID]*unconfirmedPod)
	dropped := 0
	for id, r := range p.pods {
		a := view.judge(r)
		if a.reason == "" {
			continue
		}
		log := p.Log.WithFields(logrus.Fields{
			"pod": id.String(), "container": r.ContainerID, "ip": r.IPAddress, "reason": a.reason, "verdict": a.why,
		})
		if !a.proven {
			p.unconfirmed[id] = &unconfirmedPod{reason: a.reason}
			log.Warn("local pod not confirmed by Kubernetes: kept with its interface and IP")
			continue
		}
		log.Info("local pod dropped: Kubernetes deleted it")
		delete(p.pods, id)
		dropped++
	}
	p.metrics.unconfirmedPods.Set(float64(len(p.unconfirmed)))
	p.Log.WithFields(logrus.Fields{
		"event": ev.GetName(), "resyncCount": resyncCount, "localPods": len(p.pods), "dropped": dropped,
		"unconfirmed": len(p.unconfirmed), "completeAsOf": view.completeAsOf,
	}).Info("local pods checked against Kubernetes")
	if dropped > 0 {
		p.snapshotLocked()
	}
	return nil
}

// thisNodeIPs returns this node's management IPs as strings, nil when unknown.
func (p *Plugin) thisNodeIPs() map[string]bool {
	if p.NodeSync == nil || p.NodeName == "" {
		return nil
	}
	node := p.NodeSync.GetAllNodes()[p.NodeName]
	if node == nil || len(node.MgmtIPAddresses) == 0 {
		return nil
	}
	ips := make(map[string]bool, len(node.MgmtIPAddresses))
	for _, ip := range node.MgmtIPAddresses {
		ips[ip.String()] = true
	}
	return ips
}

// Update records the pod of an AddPod and forgets the pod of a DeletePod. An AddPod for
// a pod recorded with another sandbox fails with ErrObsoletePod, one for a pod recorded
// with the same sandbox but another interface name with ErrOtherIfName.
func (p *Plugin) Update(ev api.Event, txn api.UpdateOperations) (string, error) {
	switch e := ev.(type) {
	case *AddPod:
		return p.addLocalPod(e)
	case *DeletePod:
		return p.deleteLocalPod(e), nil
	case *api.KubeStateChange:
		return p.kubeStateChanged(e, txn)
	}
	return "", nil
}

func (p *Plugin) addLocalPod(ev *AddPod) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, r := range p.pods {
		if r.ContainerID == ev.ContainerID && id != ev.Pod {
			return "", fmt.Errorf("add pod %s: %w: container %s is bound to pod %s", ev.Pod, ErrContainerInUse, ev.ContainerID, id)
		}
	}
	prev := p.pods[ev.Pod]
	if prev != nil && (prev.ContainerID != ev.ContainerID || prev.NetworkNamespace != ev.NetworkNamespace) {
		return "", fmt.Errorf("add pod %s (container %s): %w (container %s, netns %s)",
			ev.Pod, ev.ContainerID, ErrObsoletePod, prev.ContainerID, prev.NetworkNamespace)
	}
	ifName := ev.IfName
	if ifName == "" {
		ifName = DefaultIfName
	}
	if prev != nil && prev.ifName() != ifName {
		return "", otherIfNameError(ev.Pod, ev.ContainerID, ifName, prev.ifName())
	}
	addedAt := p.Clock.Now()
	if prev != nil && !prev.AddedAt.IsZero() {
		addedAt = prev.AddedAt // the same sandbox added again: it ran since then
	}
	p.pods[ev.Pod] = &podRecord{
		Name: ev.Pod.Name, Namespace: ev.Pod.Namespace,
		ContainerID: ev.ContainerID, NetworkNamespace: ev.NetworkNamespace,
		NetnsInode: p.netnsInode(ev.NetworkNamespace), IfName: ifName, AddedAt: addedAt,
	}
	p.lastAdd, p.lastAddPrev = ev, prev
	// Persisted once the ADD succeeded, with the pod's IPs (recordPodIPs): one write per
	// ADD instead of two.
	if prev != nil {
		return fmt.Sprintf("local pod %s added again (container %s)", ev.Pod, ev.ContainerID), nil
	}
	return fmt.Sprintf("local pod %s added (container %s)", ev.Pod, ev.ContainerID), nil
}

// recordPodIPs completes a successful ADD: it remembers the IPs the handlers gave the
// pod, of every family and the primary first (none when they gave none), and persists
// the local pods, if the pod is still the one of that container. The error is that of
// a change that could not be made durable: the caller must undo the ADD.
func (p *Plugin) recordPodIPs(id podmodel.ID, containerID string, ips []net.IP) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.pods[id]
	if r == nil || r.ContainerID != containerID {
		return nil
	}
	if len(ips) > 0 {
		r.setIPs(ips)
	}
	return p.recordLocked(id)
}

func (p *Plugin) deleteLocalPod(ev *DeletePod) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.pods[ev.Pod]
	if r == nil {
		return ""
	}
	delete(p.pods, ev.Pod)
	delete(p.unconfirmed, ev.Pod)
	p.metrics.unconfirmedPods.Set(float64(len(p.unconfirmed)))
	// The pod is unwired whatever the disk says; a removal that is not durable is
	// remembered, and the CNI server answers its DEL "try again" (forgetDurable).
	if err := p.recordLocked(ev.Pod); err != nil {
		p.undurableForgets[ev.Pod] = r.ContainerID
	}
	return fmt.Sprintf("local pod %s removed (container %s)", ev.Pod, r.ContainerID)
}

// forgetPending tells whether the removal of the pod with the container is not durable
// yet.
func (p *Plugin) forgetPending(id podmodel.ID, containerID string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	c, ok := p.undurableForgets[id]
	return ok && (containerID == "" || c == containerID)
}

// forgetDurable makes the removal of a deleted pod durable: when its DeletePod could not
// persist it (and no write has succeeded since), it writes a snapshot now. The error is
// that of a removal that still is not durable: the DEL must be retried, or the pod
// comes back after a restart while its IP may be another pod's.
func (p *Plugin) forgetDurable(id podmodel.ID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.undurableForgets[id]; !ok || p.state == nil {
		return nil
	}
	if p.pods[id] != nil { // added again since: that ADD's write was durable
		delete(p.undurableForgets, id)
		return nil
	}
	return p.stateWritten(p.state.snapshot(p.pods))
}

// Revert undoes the recording of a failed AddPod: the pod is forgotten, or its previous
// record restored.
func (p *Plugin) Revert(ev api.Event) error {
	add, ok := ev.(*AddPod)
	if !ok {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if add != p.lastAdd {
		return nil
	}
	if p.lastAddPrev != nil {
		p.pods[add.Pod] = p.lastAddPrev
	} else {
		delete(p.pods, add.Pod)
	}
	p.lastAdd, p.lastAddPrev = nil, nil
	_ = p.recordLocked(add.Pod) // the failed ADD was never persisted
	return nil
}

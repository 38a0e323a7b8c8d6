package podmanager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// The CNI_ARGS keys that name the pod.
const (
	// PodNameArg is the CNI argument with the pod's name.
	PodNameArg = "K8S_POD_NAME"
	// PodNamespaceArg is the CNI argument with the pod's namespace.
	PodNamespaceArg = "K8S_POD_NAMESPACE"
)

// errRequestTimeout is the cause of a request context that ran out of RequestTimeout.
var errRequestTimeout = errors.New("request timeout")

// cniServer implements the Remote CNI service on top of the plugin.
type cniServer struct {
	cni.UnimplementedRemoteCNIServer
	p *Plugin
}

// blockingEvent is an event whose producer waits for its result.
type blockingEvent interface {
	api.Event
	WaitChan() <-chan error
}

// ParsePodArgs returns the pod that CNI_ARGS (";"-separated key=value pairs) names with
// K8S_POD_NAME and K8S_POD_NAMESPACE; the error names a missing argument.
func ParsePodArgs(args string) (podmodel.ID, error) {
	var id podmodel.ID
	for _, pair := range strings.Split(args, ";") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			return podmodel.ID{}, fmt.Errorf("malformed CNI argument %q (want key=value)", pair)
		}
		switch strings.TrimSpace(k) {
		case PodNameArg:
			id.Name = strings.TrimSpace(v)
		case PodNamespaceArg:
			id.Namespace = strings.TrimSpace(v)
		}
	}
	switch {
	case id.Name == "":
		return podmodel.ID{}, fmt.Errorf("missing CNI argument %s", PodNameArg)
	case id.Namespace == "":
		return podmodel.ID{}, fmt.Errorf("missing CNI argument %s", PodNamespaceArg)
	}
	if err := id.Validate(); err != nil {
		return podmodel.ID{}, fmt.Errorf("CNI arguments %s/%s: %w", PodNamespaceArg, PodNameArg, err)
	}
	return id, nil
}

// Add connects a pod: it pushes a blocking AddPod and answers with the interfaces and
// routes the handlers filled in. A pod still connected with another sandbox is deleted
// first (a DeletePod, waited for).
func (s *cniServer) Add(ctx context.Context, req *cni.CNIRequest) (*cni.CNIReply, error) {
	start := time.Now()
	reply, err := s.add(ctx, req)
	s.p.metrics.observe(kindAdd, reply, err, time.Since(start))
	return reply, err
}

// Delete disconnects a pod: it pushes a blocking DeletePod. A pod the agent does not
// know, or knows with another sandbox container (a late DEL of an old sandbox), is left
// alone and the request succeeds.
func (s *cniServer) Delete(ctx context.Context, req *cni.CNIRequest) (*cni.CNIReply, error) {
	start := time.Now()
	reply, err := s.delete(ctx, req)
	s.p.metrics.observe(kindDelete, reply, err, time.Since(start))
	return reply, err
}

// Check succeeds when the agent has the pod connected with the request's sandbox
// container and network namespace. It pushes no event.
func (s *cniServer) Check(_ context.Context, req *cni.CNIRequest) (*cni.CNIReply, error) {
	start := time.Now()
	reply := s.check(req)
	s.p.metrics.observe(kindCheck, reply, nil, time.Since(start))
	return reply, nil
}

func (s *cniServer) requestLog(op string, req *cni.CNIRequest) logrus.FieldLogger {
	return s.p.Log.WithFields(logrus.Fields{
		"op": op, "container": req.GetContainerId(), "netns": req.GetNetworkNamespace(),
	})
}

func (s *cniServer) add(ctx context.Context, req *cni.CNIRequest) (*cni.CNIReply, error) {
	log := s.requestLog("add", req)
	id, err := ParsePodArgs(req.GetExtraArguments())
	if err != nil {
		return invalidReply(log, fmt.Errorf("add (container %s): %w", req.GetContainerId(), err)), nil
	}
	log = log.WithField("pod", id.String())
	netnsErr := ValidateNetnsPath(req.GetNetworkNamespace())
	switch {
	case req.GetContainerId() == "":
		return invalidReply(log, fmt.Errorf("add pod %s: no container ID", id)), nil
	case netnsErr != nil:
		return invalidReply(log, fmt.Errorf("add pod %s (container %s): CNI_NETNS: %w", id, req.GetContainerId(), netnsErr)), nil
	case s.p.isAgentNetns(req.GetNetworkNamespace()):
		// Wiring it would replace the node's default route with the pod's, and the DEL
		// would leave the node without one: refused before anything is done.
		return invalidReply(log, fmt.Errorf("add pod %s (container %s): network namespace %s is the node's own (the one the agent runs in); a pod is never wired there",
			id, req.GetContainerId(), req.GetNetworkNamespace())), nil
	}
	ifName := req.GetInterfaceName()
	if ifName == "" {
		ifName = DefaultIfName // a client that predates CNI_IFNAME
	}
	if err := ValidateIfName(ifName); err != nil {
		return invalidReply(log, fmt.Errorf("add pod %s (container %s): CNI_IFNAME: %w", id, req.GetContainerId(), err)), nil
	}
	log = log.WithField("ifName", ifName)
	if other := s.p.localPodByContainer(req.GetContainerId()); other != nil && other.id() != id {
		return invalidReply(log, fmt.Errorf("add pod %s: %w: container %s is bound to pod %s",
			id, ErrContainerInUse, req.GetContainerId(), other.id())), nil
	}
	log.Info("CNI add")

	ctx, cancel := s.p.requestContext(ctx)
	defer cancel()
	unlock, rpcErr := s.p.lockPod(ctx, id)
	if rpcErr != nil {
		return nil, rpcErr
	}
	defer unlock()

	old := s.p.localPod(id)
	switch {
	case old == nil:
	case old.ContainerID != req.GetContainerId() || old.NetworkNamespace != req.GetNetworkNamespace():
		if reply, rpcErr := s.deleteObsolete(ctx, log, old); reply != nil || rpcErr != nil {
			return reply, rpcErr
		}
	case old.ifName() != ifName:
		// The same sandbox under another name is a second attachment of the network
		// (a meta-plugin adding it twice), not a new sandbox: replacing the wiring
		// would cut the pod off the interface it uses, so it is refused.
		return invalidReply(log, otherIfNameError(id, req.GetContainerId(), ifName, old.ifName())), nil
	}
	for attempt := 0; ; attempt++ {
		ev := NewAddPod(id, req.GetContainerId(), req.GetNetworkNamespace())
		ev.IfName = ifName
		ev.IPAMType, ev.IPAMData = req.GetIpamType(), req.GetIpamData()
		evErr, rpcErr := s.p.pushAndWait(ctx, ev)
		if rpcErr != nil {
			log.WithError(rpcErr).Warn("CNI add not completed")
			return nil, rpcErr
		}
		// The pre-check above missed a concurrent change: delete the old sandbox and
		// try once more.
		if errors.Is(evErr, ErrObsoletePod) && attempt == 0 {
			if old := s.p.localPod(id); old != nil {
				if reply, rpcErr := s.deleteObsolete(ctx, log, old); reply != nil || rpcErr != nil {
					return reply, rpcErr
				}
			}
			continue
		}
		if errors.Is(evErr, ErrOtherIfName) {
			return invalidReply(log, evErr), nil
		}
		if errors.Is(evErr, ErrContainerInUse) {
			return invalidReply(log, fmt.Errorf("add pod %s (container %s): %w", id, req.GetContainerId(), evErr)), nil
		}
		if evErr != nil {
			// The handlers failed (the dataplane, the IPAM) and the ADD was reverted:
			// the kubelet should try again.
			return tryAgainReply(log, fmt.Errorf("add pod %s (container %s): %w", id, req.GetContainerId(), evErr)), nil
		}
		reply := addReply(ev)
		if err := s.p.recordPodIPs(id, req.GetContainerId(), podIPs(ev)); err != nil {
			return s.revertUndurable(ctx, log, id, req, err)
		}
		log.WithField("interfaces", describeInterfaces(ev.Interfaces)).Info("CNI add done")
		return reply, nil
	}
}

// otherIfNameError is the error of an ADD as ifName of a pod connected with the same
// sandbox as current.
func otherIfNameError(id podmodel.ID, containerID, ifName, current string) error {
	return fmt.Errorf("add pod %s (container %s) as %q: %w (%q); the agent wires one interface per pod: DEL it first",
		id, containerID, ifName, ErrOtherIfName, current)
}

// revertUndurable undoes an ADD whose record could not be persisted (a full disk): a
// pod the agent would forget at its next restart must not run. The pod is deleted (a
// DeletePod, waited for) and the reply asks the kubelet to try again later.
func (s *cniServer) revertUndurable(ctx context.Context, log logrus.FieldLogger, id podmodel.ID, req *cni.CNIRequest, cause error) (*cni.CNIReply, error) {
	log.WithError(cause).Error("pod state not durable: reverting the ADD")
	ev := NewDeletePod(id)
	evErr, rpcErr := s.p.pushAndWait(ctx, ev)
	if rpcErr == nil && evErr != nil {
		rpcErr = evErr
	}
	what := "the ADD was reverted"
	if rpcErr != nil {
		what = fmt.Sprintf("reverting the ADD failed too: %v", rpcErr)
	}
	return &cni.CNIReply{Result: cni.ResultTryAgain, Error: fmt.Sprintf(
		"add pod %s (container %s): the pod state cannot be made durable: %v; %s",
		id, req.GetContainerId(), cause, what)}, nil
}

// podIPs are the addresses of the pod's interface in the handlers' reply (the first
// interface that has any: the pod's), in the order of the reply, the primary first.
func podIPs(ev *AddPod) []net.IP {
	for _, iface := range ev.Interfaces {
		var ips []net.IP
		for _, a := range iface.IPAddresses {
			if a != nil && a.Address != nil {
				ips = append(ips, a.Address.IP)
			}
		}
		if len(ips) > 0 {
			return ips
		}
	}
	return nil
}

// deleteObsolete deletes a pod that is connected with another sandbox than the one being
// added, and waits for the delete. A non-nil reply or error ends the request.
func (s *cniServer) deleteObsolete(ctx context.Context, log logrus.FieldLogger, old *podRecord) (*cni.CNIReply, error) {
	log.WithFields(logrus.Fields{
		"oldContainer": old.ContainerID, "oldNetns": old.NetworkNamespace,
	}).Info("pod re-added with a new sandbox: deleting the old one first")
	ev := NewDeletePod(old.id())
	evErr, rpcErr := s.p.pushAndWait(ctx, ev)
	if rpcErr != nil {
		log.WithError(rpcErr).Warn("CNI add not completed: delete of the old sandbox")
		return nil, rpcErr
	}
	if evErr != nil {
		return errorReply(log, fmt.Errorf("add pod %s: delete its old sandbox (container %s): %w",
			old.id(), old.ContainerID, evErr)), nil
	}
	return nil, nil
}

func (s *cniServer) delete(ctx context.Context, req *cni.CNIRequest) (*cni.CNIReply, error) {
	log := s.requestLog("delete", req)
	id, err := ParsePodArgs(req.GetExtraArguments())
	if err != nil {
		// A DEL without the pod arguments can still be matched by its container.
		r := s.p.localPodByContainer(req.GetContainerId())
		if req.GetContainerId() == "" || r == nil {
			log.WithError(err).Warn("CNI delete of an unknown pod: nothing to do")
			return okReply(), nil
		}
		id = r.id()
	}
	log = log.WithField("pod", id.String())

	ctx, cancel := s.p.requestContext(ctx)
	defer cancel()
	unlock, rpcErr := s.p.lockPod(ctx, id)
	if rpcErr != nil {
		return nil, rpcErr
	}
	defer unlock()

	r := s.p.localPod(id)
	switch {
	case r == nil && s.p.forgetPending(id, req.GetContainerId()):
		log.Info("CNI delete retried: making the pod's removal durable")
		return s.durableDeleteReply(log, id, req.GetContainerId()), nil
	case r == nil:
		log.Warn("CNI delete of a pod the agent does not know: nothing to do")
		return okReply(), nil
	case req.GetContainerId() != "" && r.ContainerID != req.GetContainerId():
		log.WithField("currentContainer", r.ContainerID).Warn("CNI delete of an old sandbox of the pod: nothing to do")
		return okReply(), nil
	case req.GetInterfaceName() != "" && req.GetInterfaceName() != r.ifName():
		// The cleanup of a refused second attachment: the pod's interface stays.
		log.WithField("currentIfName", r.ifName()).Warn("CNI delete of another interface of the pod than the agent's: nothing to do")
		return okReply(), nil
	}
	log.Info("CNI delete")
	evErr, rpcErr := s.p.pushAndWait(ctx, NewDeletePod(id))
	if rpcErr != nil {
		log.WithError(rpcErr).Warn("CNI delete not completed")
		return nil, rpcErr
	}
	if evErr != nil {
		return errorReply(log, fmt.Errorf("delete pod %s (container %s): %w", id, r.ContainerID, evErr)), nil
	}
	return s.durableDeleteReply(log, id, r.ContainerID), nil
}

// durableDeleteReply answers a DEL whose pod is unwired: OK once its removal is durable,
// "try again" while it is not (a full disk): acknowledged, the DEL would not be repeated,
// and the pod would come back after a restart, its IP possibly given to another pod
// meanwhile. Every retry tries to persist the removal again.
func (s *cniServer) durableDeleteReply(log logrus.FieldLogger, id podmodel.ID, containerID string) *cni.CNIReply {
	if err := s.p.forgetDurable(id); err != nil {
		log.WithError(err).Error("pod unwired, but its removal is not durable: the DEL must be retried")
		return &cni.CNIReply{Result: cni.ResultTryAgain, Error: fmt.Sprintf(
			"delete pod %s (container %s): the pod is unwired, but its removal cannot be made durable: %v; retry the DEL",
			id, containerID, err)}
	}
	log.Info("CNI delete done")
	return okReply()
}

func (s *cniServer) check(req *cni.CNIRequest) *cni.CNIReply {
	log := s.requestLog("check", req)
	id, err := ParsePodArgs(req.GetExtraArguments())
	if err != nil {
		return errorReply(log, fmt.Errorf("check (container %s): %w", req.GetContainerId(), err))
	}
	r := s.p.localPod(id)
	switch {
	case r == nil:
		return errorReply(log, fmt.Errorf("check pod %s (container %s): the agent has no such pod", id, req.GetContainerId()))
	case r.ContainerID != req.GetContainerId():
		return errorReply(log, fmt.Errorf("check pod %s (container %s): the agent has the pod with container %s",
			id, req.GetContainerId(), r.ContainerID))
	case req.GetNetworkNamespace() != "" && r.NetworkNamespace != req.GetNetworkNamespace():
		return errorReply(log, fmt.Errorf("check pod %s (container %s): the agent has the pod in netns %s, not %s",
			id, req.GetContainerId(), r.NetworkNamespace, req.GetNetworkNamespace()))
	case req.GetInterfaceName() != "" && req.GetInterfaceName() != r.ifName():
		return errorReply(log, fmt.Errorf("check pod %s (container %s): the agent has the pod's interface as %q, not %q",
			id, req.GetContainerId(), r.ifName(), req.GetInterfaceName()))
	}
	if verdict, reason := s.p.checkNetns(r.NetworkNamespace, r.NetnsInode); verdict == netnsGone {
		// CNI's well-known code 3: the container is unknown or does not exist.
		return unknownContainerReply(log, fmt.Errorf("check pod %s (container %s): its network namespace %s is gone: %s",
			id, req.GetContainerId(), r.NetworkNamespace, reason))
	}
	if check := s.p.CheckPodWiring; check != nil {
		if err := check(id); err != nil {
			return errorReply(log, fmt.Errorf("check pod %s (container %s): %w", id, req.GetContainerId(), err))
		}
	}
	log.WithField("pod", id.String()).Debug("CNI check: pod known and wired")
	return okReply()
}

// requestContext bounds a request by the configured RequestTimeout.
func (p *Plugin) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, time.Duration(p.config.RequestTimeout), errRequestTimeout)
}

// pushAndWait pushes a blocking event and waits for its result. evErr is the event's
// outcome; rpcErr, a gRPC status, is set instead when there is none: the loop refused
// the event, the request ran out of time or was cancelled, or the agent is stopping.
func (p *Plugin) pushAndWait(ctx context.Context, ev blockingEvent) (evErr, rpcErr error) {
	select {
	case <-p.closing:
		return nil, status.Errorf(codes.Unavailable, "%s: the agent is shutting down", ev)
	default:
	}
	if err := p.EventLoop.PushEvent(ev); err != nil {
		return nil, status.Errorf(codes.Unavailable, "%s: the event loop did not take the event: %v", ev, err)
	}
	select {
	case err := <-ev.WaitChan():
		if errors.Is(err, controller.ErrClosedController) || errors.Is(err, controller.ErrEventLoopIsAborting) {
			// The loop stopped with the event unprocessed (the agent is stopping, or
			// aborting after a fatal error): nothing was done, the request may be
			// repeated once an agent runs again (CNI code 11, not a failure of the pod).
			return nil, status.Errorf(codes.Unavailable, "%s: not processed, the agent is stopping: %v", ev, err)
		}
		return err, nil
	case <-ctx.Done():
		return nil, contextStatus(ctx, ev.String(), time.Duration(p.config.RequestTimeout))
	case <-p.closing:
		return nil, status.Errorf(codes.Unavailable, "%s: the agent is shutting down", ev)
	}
}

// contextStatus turns the end of a request context into a gRPC status.
func contextStatus(ctx context.Context, what string, timeout time.Duration) error {
	if errors.Is(context.Cause(ctx), errRequestTimeout) {
		return status.Errorf(codes.DeadlineExceeded, "%s: not processed within %v (agent busy or not in sync yet)", what, timeout)
	}
	st := status.FromContextError(ctx.Err())
	return status.Errorf(st.Code(), "%s: %v", what, ctx.Err())
}

// lockPod serialises the requests for one pod.
func (p *Plugin) lockPod(ctx context.Context, id podmodel.ID) (unlock func(), rpcErr error) {
	unlock, err := p.locks.lock(ctx, id)
	if err != nil {
		return nil, contextStatus(ctx, "pod "+id.String()+": waiting for another request on the pod",
			time.Duration(p.config.RequestTimeout))
	}
	return unlock, nil
}

func okReply() *cni.CNIReply { return &cni.CNIReply{Result: cni.ResultOK} }

// invalidReply is the reply to a request refused as invalid (cni.ResultInvalid).
func invalidReply(log logrus.FieldLogger, err error) *cni.CNIReply {
	log.WithError(err).Warn("CNI request refused")
	return &cni.CNIReply{Result: cni.ResultInvalid, Error: err.Error()}
}

// tryAgainReply is the reply to a request that failed and was reverted: it may succeed
// later (cni.ResultTryAgain).
func tryAgainReply(log logrus.FieldLogger, err error) *cni.CNIReply {
	log.WithError(err).Warn("CNI request failed, reverted")
	return &cni.CNIReply{Result: cni.ResultTryAgain, Error: err.Error()}
}

// unknownContainerReply is the reply to a CHECK of a pod whose network namespace is
// gone (cni.ResultUnknownContainer).
func unknownContainerReply(log logrus.FieldLogger, err error) *cni.CNIReply {
	log.WithError(err).Warn("CNI check: the pod's network namespace is gone")
	return &cni.CNIReply{Result: cni.ResultUnknownContainer, Error: err.Error()}
}

func errorReply(log logrus.FieldLogger, err error) *cni.CNIReply {
	log.WithError(err).Warn("CNI request failed")
	return &cni.CNIReply{Result: cni.ResultError, Error: err.Error()}
}

// addReply turns what the handlers filled into an AddPod into the CNI reply; every
// interface lies in the pod's network namespace.
func addReply(ev *AddPod) *cni.CNIReply {
	reply := okReply()
	for _, iface := range ev.Interfaces {
		ri := &cni.CNIReply_Interface{Name: iface.HostName, Mac: iface.MAC, Sandbox: ev.NetworkNamespace}
		for _, a := range iface.IPAddresses {
			if a == nil || a.Address == nil {
				continue
			}
			ip := &cni.CNIReply_Interface_IP{Version: cni.CNIReply_Interface_IP_IPV4, Address: a.Address.String()}
			if a.Address.IP.To4() == nil {
				ip.Version = cni.CNIReply_Interface_IP_IPV6
			}
			if a.Gateway != nil {
				ip.Gateway = a.Gateway.String()
			}
			ri.IpAddresses = append(ri.IpAddresses, ip)
		}
		reply.Interfaces = append(reply.Interfaces, ri)
	}
	for _, r := range ev.Routes {
		if r.Network == nil {
			continue
		}
		rr := &cni.CNIReply_Route{Dst: r.Network.String()}
		if r.Gateway != nil {
			rr.Gw = r.Gateway.String()
		}
		reply.Routes = append(reply.Routes, rr)
	}
	return reply
}

func describeInterfaces(ifaces []PodInterface) string {
	s := make([]string, len(ifaces))
	for i, iface := range ifaces {
		s[i] = iface.String()
	}
	return strings.Join(s, " ")
}

// podLocks is a lock per pod ID, held while a request for the pod runs (so an add that
// replaces an old sandbox cannot interleave with another request for the pod).
type podLocks struct {
	mu sync.Mutex
	m  map[podmodel.ID]*podLock
}

type podLock struct {
	ch    chan struct{} // holds a token while the lock is taken
	users int           // requests holding or waiting for the lock
}

// lock takes the pod's lock, giving up when ctx ends.
func (l *podLocks) lock(ctx context.Context, id podmodel.ID) (func(), error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[podmodel.ID]*podLock)
	}
	pl := l.m[id]
	if pl == nil {
		pl = &podLock{ch: make(chan struct{}, 1)}
		l.m[id] = pl
	}
	pl.users++
	l.mu.Unlock()
	select {
	case pl.ch <- struct{}{}:
		return func() {
			<-pl.ch
			l.release(id, pl)
		}, nil
	case <-ctx.Done():
		l.release(id, pl)
		return nil, ctx.Err()
	}
}

func (l *podLocks) release(id podmodel.ID, pl *podLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pl.users--
	if pl.users == 0 {
		delete(l.m, id)
	}
}

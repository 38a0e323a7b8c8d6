package podmanager

import (
	"fmt"
	"time"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrsync"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// absence is what the Kubernetes state says about a local pod that it does not show
// running here, and whether that is proof enough to forget the pod.
type absence struct {
	// reason says what the Kubernetes state shows ("" when it shows the pod here, or
	// has no pod state at all: nothing to judge).
	reason string
	// proven is true when the state is known complete as of a time after the pod's
	// ADD: the pod was deleted in Kubernetes (or recreated on another node).
	proven bool
	// why explains the verdict for the log.
	why string
}

// kubeView is the part of a resync's Kubernetes state that decides about local pods.
type kubeView struct {
	// pods are the KSR pods; nil when the resync carries no pod state.
	pods api.KeyValuePairs
	// completeAsOf is the time as of which the pods are complete (contiv-ksr's sync
	// marker); zero without a marker.
	completeAsOf time.Time
	// nodeIPs are this node's management IPs (nil: unknown, not checked).
	nodeIPs map[string]bool
	// skew is the clock difference allowed between this node and contiv-ksr.
	skew time.Duration
	// now is this node's time: a marker later than now+skew comes from a clock that is
	// off by more than skew (or is forged) and proves nothing.
	now time.Time
}

// newKubeView takes what decides about local pods from a resync's state.
func newKubeView(kube api.KubeStateData, nodeIPs map[string]bool, skew time.Duration, now time.Time) kubeView {
	v := kubeView{nodeIPs: nodeIPs, skew: skew, now: now}
	if pods, ok := kube[podmodel.Keyword]; ok {
		v.pods = pods
		if v.pods == nil {
			v.pods = api.KeyValuePairs{}
		}
	}
	if m, ok := kube[ksrsync.Keyword][ksrsync.Key(podmodel.Keyword)].(*ksrsync.SyncMarker); ok && m != nil {
		v.completeAsOf = m.ListedAfter()
	}
	return v
}

// judge says whether r is missing from this node in the Kubernetes state and whether
// that proves the pod gone. Absence from a copy that may be stale (contiv-ksr down,
// between leaders, lagging, the agent reading its bolt mirror) is no proof: only a copy
// complete as of a time after the pod's ADD (allowing for clock skew) is. A pod the
// copy shows on another node is judged the same way: an older copy may show the
// previous pod of that name.
func (v kubeView) judge(r *podRecord) absence {
	if v.pods == nil {
		return absence{}
	}
	var a absence
	kp, _ := v.pods[podmodel.Key(r.Name, r.Namespace)].(*podmodel.Pod)
	switch {
	case kp == nil:
		a.reason = "the pod does not exist in Kubernetes' copy"
	case kp.GetHostIpAddress() != "" && v.nodeIPs != nil && !v.nodeIPs[kp.GetHostIpAddress()]:
		a.reason = "Kubernetes' copy runs the pod on the node with IP " + kp.GetHostIpAddress()
	default:
		return absence{}
	}
	switch {
	case v.completeAsOf.IsZero():
		a.why = "contiv-ksr published no sync marker (down since the start, or older than this agent): the copy may lack the pod; kept until its CNI DEL"
	case v.completeAsOf.After(v.now.Add(v.skew)):
		a.why = fmt.Sprintf("contiv-ksr's sync marker of %s is later than this node's time %s (+%v): the clocks differ by more than maxClockSkew; kept until its CNI DEL",
			v.completeAsOf.UTC().Format(time.RFC3339), v.now.UTC().Format(time.RFC3339), v.skew)
	case r.AddedAt.IsZero():
		a.why = "the pod's ADD time is unknown; kept until its CNI DEL"
	case !v.completeAsOf.After(r.AddedAt.Add(v.skew)):
		a.why = fmt.Sprintf("the copy is complete only as of %s, not after the pod's ADD at %s (+%v clock skew); kept until its CNI DEL or a newer sync marker",
			v.completeAsOf.UTC().Format(time.RFC3339), r.AddedAt.UTC().Format(time.RFC3339), v.skew)
	default:
		a.proven = true
		a.why = fmt.Sprintf("the copy is complete as of %s, after the pod's ADD at %s", v.completeAsOf.UTC().Format(time.RFC3339),
			r.AddedAt.UTC().Format(time.RFC3339))
	}
	return a
}

package podmanager

import (
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrsync"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// Unconfirmed pods: the local pods that the Kubernetes state lacks (or shows on another
// node) without proving them deleted. They stay wired; between resyncs the pod manager
// follows the changes that decide about them:
//
//	KubeStateChange pod/<name> of an unconfirmed pod that now runs here ─▶ confirmed
//	KubeStateChange pod/<name> of a local pod now absent or elsewhere  ─▶ unconfirmed
//	KubeStateChange ksrsync/pod (a new sync marker) ─▶ each unconfirmed pod the marker
//	    proves gone (complete after its ADD + maxClockSkew) ─▶ DeletePod follow-up
//
// A change costs O(1), a new marker O(unconfirmed pods).

// unconfirmedPod is what the pod manager remembers about an unconfirmed pod.
type unconfirmedPod struct {
	// reason says what the Kubernetes state shows.
	reason string
}

// isDecisive tells whether a Kubernetes change may decide about local pods: a change of
// a pod or of contiv-ksr's pod sync marker.
func isDecisive(ev *api.KubeStateChange) bool {
	return ev.Resource == podmodel.Keyword ||
		(ev.Resource == ksrsync.Keyword && ev.Key == ksrsync.Key(podmodel.Keyword))
}

// kubeStateChanged follows one decisive change (see above); p.mu is not held.
func (p *Plugin) kubeStateChanged(ev *api.KubeStateChange, txn api.UpdateOperations) (string, error) {
	if ev.Resource == ksrsync.Keyword {
		return p.markerChanged(ev, txn)
	}
	name, namespace, err := podmodel.ParsePodFromKey(ev.Key)
	if err != nil {
		return "", nil
	}
	id := podmodel.ID{Name: name, Namespace: namespace}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.pods[id]
	if r == nil {
		return "", nil
	}
	pods := api.KeyValuePairs{}
	if ev.NewValue != nil {
		pods[ev.Key] = ev.NewValue
	}
	view := kubeView{pods: pods, completeAsOf: p.completeAsOf, nodeIPs: p.thisNodeIPs(),
		skew: time.Duration(p.config.MaxClockSkew), now: p.Clock.Now()}
	a := view.judge(r)
	_, was := p.unconfirmed[id]
	switch {
	case a.reason == "" && was:
		delete(p.unconfirmed, id)
		p.metrics.unconfirmedPods.Set(float64(len(p.unconfirmed)))
		return fmt.Sprintf("local pod %s confirmed by Kubernetes", id), nil
	case a.reason != "":
		p.unconfirmed[id] = &unconfirmedPod{reason: a.reason}
		p.metrics.unconfirmedPods.Set(float64(len(p.unconfirmed)))
		if !was {
			p.Log.WithFields(logrus.Fields{"pod": id.String(), "container": r.ContainerID, "reason": a.reason}).
				Info("local pod no longer confirmed by Kubernetes: kept until its CNI DEL or a sync marker proves it gone")
		}
	}
	return "", nil
}

// markerChanged takes contiv-ksr's new pod sync marker and pushes a DeletePod for every
// unconfirmed pod that it proves gone.
func (p *Plugin) markerChanged(ev *api.KubeStateChange, txn api.UpdateOperations) (string, error) {
	m, _ := ev.NewValue.(*ksrsync.SyncMarker)
	p.mu.Lock()
	p.completeAsOf = m.ListedAfter() // the zero time when the marker was removed
	view := kubeView{pods: api.KeyValuePairs{}, completeAsOf: p.completeAsOf, skew: time.Duration(p.config.MaxClockSkew),
		now: p.Clock.Now()}
	var gone []podmodel.ID
	for id := range p.unconfirmed {
		r := p.pods[id]
		if r == nil {
			delete(p.unconfirmed, id)
			continue
		}
		if a := view.judge(r); a.proven {
			p.Log.WithFields(logrus.Fields{"pod": id.String(), "container": r.ContainerID, "ip": r.IPAddress,
				"reason": p.unconfirmed[id].reason, "verdict": a.why}).Info("local pod removed: Kubernetes deleted it")
			gone = append(gone, id)
		}
	}
	p.mu.Unlock()
	for _, id := range gone {
		if err := api.PushFollowUp(txn, p.EventLoop, NewDeletePod(id)); err != nil {
			return "", fmt.Errorf("remove pod %s that Kubernetes deleted: %w", id, err)
		}
	}
	if len(gone) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%d unconfirmed local pods proven deleted by the sync marker of %s: removing them", len(gone),
		p.completeAsOf.UTC().Format(time.RFC3339)), nil
}

package processor

import (
	"fmt"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
)

// ResyncEventData is the part of the Kubernetes state that the processor rebuilds its
// state from on a resync (type of the seed API: Resync reads the Kubernetes state
// directly, without collecting it here first).
type ResyncEventData struct {
	// Pods are the pods of the cluster.
	Pods []podmodel.ID
	// Endpoints are all Endpoints objects.
	Endpoints []*epmodel.Endpoints
	// Services are all Service objects.
	Services []*svcmodel.Service
}

// NewResyncEventData returns empty resync data.
func NewResyncEventData() *ResyncEventData {
	return &ResyncEventData{}
}

// String summarises the data by counts.
func (red ResyncEventData) String() string {
	return fmt.Sprintf("ResyncEventData <Pods:%d Endpoints:%d Services:%d>", len(red.Pods), len(red.Endpoints), len(red.Services))
}

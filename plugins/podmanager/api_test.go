package podmanager

import (
	"errors"
	"net"
	"testing"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

func TestPodEventsAreBlockingUpdatesWithUpstreamSemantics(t *testing.T) {
	id := podmodel.ID{Name: "nginx", Namespace: "default"}
	add := NewAddPod(id, "c0ffee", "/proc/42/ns/net")
	del := NewDeletePod(id)
	var _ api.UpdateEvent = add
	var _ api.UpdateEvent = del
	if add.GetName() != "Add Pod" || add.TransactionType() != api.RevertOnFailure || add.Direction() != api.Forward || !add.IsBlocking() {
		t.Errorf("AddPod = %s %v %v %v", add.GetName(), add.TransactionType(), add.Direction(), add.IsBlocking())
	}
	if del.GetName() != "Delete Pod" || del.TransactionType() != api.BestEffortIgnoreErrors || del.Direction() != api.Reverse || !del.IsBlocking() {
		t.Errorf("DeletePod = %s %v %v %v", del.GetName(), del.TransactionType(), del.Direction(), del.IsBlocking())
	}
	if got := add.String(); got != "Add Pod default/nginx (container c0ffee, netns /proc/42/ns/net)" {
		t.Errorf("AddPod.String = %q", got)
	}
	if got := del.String(); got != "Delete Pod default/nginx" {
		t.Errorf("DeletePod.String = %q", got)
	}
	boom := errors.New("boom")
	go add.Done(boom)
	if err := add.Wait(); !errors.Is(err, boom) {
		t.Errorf("Wait = %v", err)
	}
}

func TestPodInterfaceString(t *testing.T) {
	_, n, _ := net.ParseCIDR("10.1.1.2/32")
	n.IP = net.ParseIP("10.1.1.2").To4()
	i := PodInterface{HostName: "eth0", IPAddresses: []*IPWithGateway{{Address: n, Gateway: net.ParseIP("10.1.1.1")}}}
	if got := i.String(); got != "eth0[10.1.1.2/32 gw 10.1.1.1]" {
		t.Errorf("String = %q", got)
	}
}

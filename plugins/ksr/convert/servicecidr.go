package convert

import (
	"fmt"
	"net"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
)

// ServiceCIDR converts a ServiceCIDR: its name, spec.cidrs (in order) and its Ready
// condition. A ServiceCIDR without a Ready condition is ready, as kube-apiserver's
// cluster IP allocator reads it (it allocates from such a range); only an explicit
// status other than True makes it not ready. A CIDR that does not parse is an error
// (naming the object, the field and the value): the object is not reflected.
func ServiceCIDR(c *networkingv1.ServiceCIDR) (*servicecidr.ServiceCIDR, error) {
	if c == nil {
		return nil, fmt.Errorf("service CIDR: %w", errNil)
	}
	if err := checkName("service CIDR", c.Name); err != nil {
		return nil, err
	}
	for i, cidr := range c.Spec.CIDRs {
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			return nil, fmt.Errorf("service CIDR %s: spec.cidrs[%d]: %q is not a CIDR", c.Name, i, cidr)
		}
	}
	out := &servicecidr.ServiceCIDR{Name: c.Name, Cidrs: copyStrings(c.Spec.CIDRs), Ready: true}
	for _, cond := range c.Status.Conditions {
		if cond.Type == networkingv1.ServiceCIDRConditionReady {
			out.Ready = cond.Status == metav1.ConditionTrue
			break
		}
	}
	return out, nil
}

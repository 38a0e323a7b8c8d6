package processor

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"

	"github.com/sirupsen/logrus"

	cidrmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// serviceCIDRs are the ranges of the ServiceCIDR objects (networking.k8s.io/v1) by
// object name: a cluster IP outside the configured service CIDR is served when one of
// them holds it. The objects are few (one per range an administrator added).
type serviceCIDRs struct {
	byName map[string][]*net.IPNet
	nets   []*net.IPNet // all of them, in the order of the names
}

// contains tells whether a ServiceCIDR holds the address.
func (c *serviceCIDRs) contains(a renderer.Address) bool {
	ip := a.IP()
	for _, n := range c.nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// set replaces the ranges of one object (nil: the object is gone) and tells whether
// the ranges changed.
func (c *serviceCIDRs) set(name string, nets []*net.IPNet) bool {
	old, had := c.byName[name]
	if had == (nets != nil) && slices.EqualFunc(old, nets, sameNet) {
		return false
	}
	if c.byName == nil {
		c.byName = make(map[string][]*net.IPNet)
	}
	if nets == nil {
		delete(c.byName, name)
	} else {
		c.byName[name] = nets
	}
	names := make([]string, 0, len(c.byName))
	for n := range c.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	c.nets = c.nets[:0:0]
	for _, n := range names {
		c.nets = append(c.nets, c.byName[n]...)
	}
	return true
}

func sameNet(a, b *net.IPNet) bool { return a.IP.Equal(b.IP) && slices.Equal(a.Mask, b.Mask) }

// parseServiceCIDR returns the ranges of a ServiceCIDR object; a range that does not
// parse is an error naming it.
func parseServiceCIDR(obj *cidrmodel.ServiceCIDR) ([]*net.IPNet, error) {
	nets := make([]*net.IPNet, 0, len(obj.GetCidrs()))
	for i, c := range obj.GetCidrs() {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			return nil, fmt.Errorf("servicecidr %s: spec.cidrs[%d] %q: %w", obj.GetName(), i, c, err)
		}
		nets = append(nets, n)
	}
	return nets, nil
}

// resyncServiceCIDRs reads every ServiceCIDR of the Kubernetes state; when the ranges
// changed, the services with a cluster IP outside the configured service CIDR are
// parsed again by the resync. Bad objects are logged and skipped.
func (sp *ServiceProcessor) resyncServiceCIDRs(kube controller.KubeStateData) {
	next := serviceCIDRs{}
	for key, v := range kube[cidrmodel.Keyword] {
		obj, ok := v.(*cidrmodel.ServiceCIDR)
		if !ok || obj.GetName() == "" {
			sp.Log.WithFields(logrus.Fields{"key": key, "type": fmt.Sprintf("%T", v)}).Warn("invalid servicecidr value skipped")
			continue
		}
		nets, err := parseServiceCIDR(obj)
		if err != nil {
			sp.Log.WithError(err).Warn("ServiceCIDR skipped")
			continue
		}
		next.set(obj.GetName(), nets)
	}
	if slices.EqualFunc(next.nets, sp.cidrs.nets, sameNet) {
		return
	}
	sp.cidrs = next
	for s := range sp.outsideCIDR {
		s.metaGen = 0 // parsed again by this resync (resyncHalves)
	}
}

// updateServiceCIDR applies a change of one ServiceCIDR object: only the services
// with a cluster IP outside the configured service CIDR (kept in an index) are parsed
// and rendered again.
func (sp *ServiceProcessor) updateServiceCIDR(txn renderer.UpdateTxn, name string, obj *cidrmodel.ServiceCIDR) error {
	var nets []*net.IPNet
	if obj != nil {
		var err error
		if nets, err = parseServiceCIDR(obj); err != nil {
			return err
		}
	}
	if !sp.cidrs.set(name, nets) {
		return nil
	}
	sp.refreshNodeContext()
	affected := make([]*Service, 0, len(sp.outsideCIDR))
	for s := range sp.outsideCIDR {
		affected = append(affected, s)
	}
	sort.Slice(affected, func(i, j int) bool { return affected[i].id.String() < affected[j].id.String() })
	var errs []error
	for _, s := range affected {
		errs = append(errs, sp.updateService(txn, s.id, func(s *Service) { s.setMetadata(s.meta) }))
	}
	return errors.Join(errs...)
}

// indexOutsideCIDR keeps the index of the services with a cluster IP outside the
// configured service CIDR.
func (sp *ServiceProcessor) indexOutsideCIDR(s *Service) {
	if s.outsideCIDR && s.meta != nil {
		sp.outsideCIDR[s] = struct{}{}
	} else {
		delete(sp.outsideCIDR, s)
	}
}

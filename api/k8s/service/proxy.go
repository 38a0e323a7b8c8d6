package service

// Labels that leave a Service to another proxy: kube-proxy ignores a Service that
// has either, whatever the value (pkg/proxy/apis LabelServiceProxyName; the headless
// label of headless Services and of mirrored EndpointSlices).
const (
	LabelServiceProxyName = "service.kubernetes.io/service-proxy-name"
	LabelHeadless         = "service.kubernetes.io/headless"
)

// OtherProxyLabel returns the label that leaves the Service to another proxy, if it
// has one.
func OtherProxyLabel(svc *Service) (label string, ok bool) {
	for _, l := range [...]string{LabelServiceProxyName, LabelHeadless} {
		if _, ok := svc.GetLabels()[l]; ok {
			return l, true
		}
	}
	return "", false
}

package k8s

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/plugins/rest"
)

var update = flag.Bool("update", false, "rewrite contiv-vpp.yaml from the chart")

const (
	manifestFile = "contiv-vpp.yaml"
	chartDir     = "contiv-vpp"
	namespace    = "kube-system"
)

// strictDecoder decodes YAML into the Kubernetes API types of client-go's scheme and
// fails on unknown and duplicate fields.
var strictDecoder = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
	kjson.SerializerOptions{Yaml: true, Strict: true})

// manifest is a decoded YAML stream, its objects indexed by kind and name.
type manifest struct {
	configMaps          map[string]*corev1.ConfigMap
	serviceAccounts     map[string]*corev1.ServiceAccount
	services            map[string]*corev1.Service
	clusterRoles        map[string]*rbacv1.ClusterRole
	clusterRoleBindings map[string]*rbacv1.ClusterRoleBinding
	daemonSets          map[string]*appsv1.DaemonSet
	statefulSets        map[string]*appsv1.StatefulSet
	// ids are "Kind/name" of every object, in stream order.
	ids []string
}

// workload is what the checks need of a DaemonSet or StatefulSet.
type workload struct {
	id       string
	selector *metav1.LabelSelector
	pod      *corev1.PodTemplateSpec
}

// decodeManifest decodes every document of a YAML stream strictly. Documents holding only
// comments are skipped.
func decodeManifest(stream string) (*manifest, error) {
	m := &manifest{
		configMaps:          map[string]*corev1.ConfigMap{},
		serviceAccounts:     map[string]*corev1.ServiceAccount{},
		services:            map[string]*corev1.Service{},
		clusterRoles:        map[string]*rbacv1.ClusterRole{},
		clusterRoleBindings: map[string]*rbacv1.ClusterRoleBinding{},
		daemonSets:          map[string]*appsv1.DaemonSet{},
		statefulSets:        map[string]*appsv1.StatefulSet{},
	}
	seen := map[string]bool{}
	for i, doc := range splitDocuments(stream) {
		var generic any
		if err := yaml.Unmarshal([]byte(doc), &generic); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if generic == nil {
			continue
		}
		obj, gvk, err := strictDecoder.Decode([]byte(doc), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		acc, err := meta.Accessor(obj)
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, gvk.Kind, err)
		}
		id := gvk.Kind + "/" + acc.GetName()
		if seen[id] {
			return nil, fmt.Errorf("%s defined twice", id)
		}
		seen[id] = true
		m.ids = append(m.ids, id)

		clusterScoped := false
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			m.configMaps[o.Name] = o
		case *corev1.ServiceAccount:
			m.serviceAccounts[o.Name] = o
		case *corev1.Service:
			m.services[o.Name] = o
		case *rbacv1.ClusterRole:
			m.clusterRoles[o.Name] = o
			clusterScoped = true
		case *rbacv1.ClusterRoleBinding:
			m.clusterRoleBindings[o.Name] = o
			clusterScoped = true
		case *appsv1.DaemonSet:
			m.daemonSets[o.Name] = o
		case *appsv1.StatefulSet:
			m.statefulSets[o.Name] = o
		default:
			return nil, fmt.Errorf("%s: kind not expected in the manifests", id)
		}
		if clusterScoped && acc.GetNamespace() != "" {
			return nil, fmt.Errorf("%s: cluster-scoped object with namespace %q", id, acc.GetNamespace())
		}
		if !clusterScoped && acc.GetNamespace() != namespace {
			return nil, fmt.Errorf("%s: namespace %q, want %s", id, acc.GetNamespace(), namespace)
		}
	}
	return m, nil
}

// workloads returns the DaemonSets and StatefulSets, sorted by id.
func (m *manifest) workloads() []workload {
	var ws []workload
	for _, d := range m.daemonSets {
		ws = append(ws, workload{id: "DaemonSet/" + d.Name, selector: d.Spec.Selector, pod: &d.Spec.Template})
	}
	for _, s := range m.statefulSets {
		ws = append(ws, workload{id: "StatefulSet/" + s.Name, selector: s.Spec.Selector, pod: &s.Spec.Template})
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].id < ws[j].id })
	return ws
}

// container finds a container (init or main) of a workload's pod.
func container(pod *corev1.PodTemplateSpec, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// envValue returns the literal value of an environment variable of a container.
func envValue(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom == nil {
			return e.Value, true
		}
	}
	return "", false
}

// shellScript returns the script of a container run as `/bin/sh -c <script>`.
func shellScript(c *corev1.Container) (string, bool) {
	args := append(append([]string{}, c.Command...), c.Args...)
	if len(args) >= 3 && args[0] == "/bin/sh" && args[1] == "-c" {
		return args[2], true
	}
	return "", false
}

// mountFor returns the mount of a container under which path lies and the path relative
// to the mount point.
func mountFor(c *corev1.Container, p string) (*corev1.VolumeMount, string) {
	var best *corev1.VolumeMount
	for i := range c.VolumeMounts {
		mp := c.VolumeMounts[i].MountPath
		if (p == mp || strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/")) &&
			(best == nil || len(mp) > len(best.MountPath)) {
			best = &c.VolumeMounts[i]
		}
	}
	if best == nil {
		return nil, ""
	}
	return best, strings.TrimPrefix(strings.TrimPrefix(p, best.MountPath), "/")
}

// volume returns a volume of a pod by name.
func volume(pod *corev1.PodTemplateSpec, name string) *corev1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// configMapFile returns the ConfigMap key that a file of a configMap volume shows.
func configMapFile(v *corev1.Volume, rel string) string {
	for _, it := range v.ConfigMap.Items {
		if it.Path == rel {
			return it.Key
		}
	}
	if len(v.ConfigMap.Items) > 0 {
		return ""
	}
	return rel
}

// fileOf returns the content of a file that a container reads from a ConfigMap volume,
// or an error naming why the path is not one.
func (m *manifest) fileOf(pod *corev1.PodTemplateSpec, c *corev1.Container, p string) (string, error) {
	mnt, rel := mountFor(c, p)
	if mnt == nil {
		return "", fmt.Errorf("%s is not under any volume mount", p)
	}
	v := volume(pod, mnt.Name)
	if v == nil || v.ConfigMap == nil {
		return "", fmt.Errorf("%s is not in a ConfigMap volume", p)
	}
	cm, ok := m.configMaps[v.ConfigMap.Name]
	if !ok {
		return "", fmt.Errorf("%s: ConfigMap %s not in the manifests", p, v.ConfigMap.Name)
	}
	data, ok := cm.Data[configMapFile(v, rel)]
	if !ok {
		return "", fmt.Errorf("%s: ConfigMap %s has no key %q", p, cm.Name, rel)
	}
	return data, nil
}

// problems collects what a check found wrong.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// check verifies what must hold between the objects whatever the chart values are: labels
// and selectors, volumes and mounts, ConfigMaps and the files the programs are told to
// read, ports of probes, services and configuration files, RBAC references, scripts.
func (m *manifest) check() problems {
	var p problems
	for _, w := range m.workloads() {
		m.checkWorkload(&p, w)
	}
	m.checkServices(&p)
	m.checkRBAC(&p)
	m.checkEtcdPorts(&p)
	m.checkCNI(&p)
	return p
}

func (m *manifest) checkWorkload(p *problems, w workload) {
	sel, err := metav1.LabelSelectorAsSelector(w.selector)
	switch {
	case err != nil:
		p.add("%s: selector: %v", w.id, err)
	case sel.Empty():
		p.add("%s: empty selector", w.id)
	case !sel.Matches(labels.Set(w.pod.Labels)):
		p.add("%s: selector %s does not match the pod labels %v", w.id, sel, w.pod.Labels)
	}
	spec := &w.pod.Spec
	if spec.ServiceAccountName != "" {
		if _, ok := m.serviceAccounts[spec.ServiceAccountName]; !ok {
			p.add("%s: ServiceAccount %s not in the manifests", w.id, spec.ServiceAccountName)
		}
	}
	used := map[string]bool{}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		if volumes[v.Name] {
			p.add("%s: volume %s defined twice", w.id, v.Name)
		}
		volumes[v.Name] = true
		if v.ConfigMap != nil {
			cm, ok := m.configMaps[v.ConfigMap.Name]
			if !ok {
				p.add("%s: volume %s: ConfigMap %s not in the manifests", w.id, v.Name, v.ConfigMap.Name)
				continue
			}
			for _, it := range v.ConfigMap.Items {
				if _, ok := cm.Data[it.Key]; !ok {
					p.add("%s: volume %s: ConfigMap %s has no key %s", w.id, v.Name, cm.Name, it.Key)
				}
			}
		}
	}
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for i := range containers {
		c := &containers[i]
		id := w.id + " container " + c.Name
		paths := map[string]bool{}
		for _, vm := range c.VolumeMounts {
			used[vm.Name] = true
			if !volumes[vm.Name] {
				p.add("%s: mount %s names no volume", id, vm.Name)
			}
			if paths[vm.MountPath] {
				p.add("%s: two mounts at %s", id, vm.MountPath)
			}
			paths[vm.MountPath] = true
		}
		if repo, tag, ok := strings.Cut(c.Image[strings.LastIndex(c.Image, "/")+1:], ":"); !ok || repo == "" || tag == "" {
			p.add("%s: image %q has no tag", id, c.Image)
		}
		m.checkConfigEnv(p, id, w.pod, c)
		m.checkProbes(p, id, w.pod, c)
		if script, ok := shellScript(c); ok {
			checkScript(p, id, script)
		}
	}
	for name := range volumes {
		if !used[name] {
			p.add("%s: volume %s is mounted by no container", w.id, name)
		}
	}
}

// checkConfigEnv checks every <NAME>_CONFIG variable: the file is in a ConfigMap the pod
// mounts, or in an emptyDir that an init container of the pod writes it into.
func (m *manifest) checkConfigEnv(p *problems, id string, pod *corev1.PodTemplateSpec, c *corev1.Container) {
	for _, e := range c.Env {
		if !strings.HasSuffix(e.Name, "_CONFIG") {
			continue
		}
		if e.ValueFrom != nil || !path.IsAbs(e.Value) {
			p.add("%s: %s=%q is not an absolute path", id, e.Name, e.Value)
			continue
		}
		mnt, rel := mountFor(c, e.Value)
		if mnt == nil {
			p.add("%s: %s=%s is not under any volume mount", id, e.Name, e.Value)
			continue
		}
		v := volume(pod, mnt.Name)
		switch {
		case v == nil:
			// reported by checkWorkload
		case v.ConfigMap != nil:
			if _, err := m.fileOf(pod, c, e.Value); err != nil {
				p.add("%s: %s: %v", id, e.Name, err)
			}
		case v.EmptyDir != nil:
			if !writtenByInitContainer(pod, v.Name, rel) {
				p.add("%s: %s=%s: no init container writes %s into volume %s", id, e.Name, e.Value, rel, v.Name)
			}
		default:
			p.add("%s: %s=%s: configuration read from volume %s, neither a ConfigMap nor rendered by an init container",
				id, e.Name, e.Value, v.Name)
		}
	}
}

// writtenByInitContainer says whether an init container mounts the volume and its script
// redirects output into the file rel of it.
func writtenByInitContainer(pod *corev1.PodTemplateSpec, vol, rel string) bool {
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		script, ok := shellScript(ic)
		if !ok {
			continue
		}
		for _, vm := range ic.VolumeMounts {
			if vm.Name == vol && strings.Contains(script, "> "+path.Join(vm.MountPath, rel)) {
				return true
			}
		}
	}
	return false
}

// checkProbes checks that HTTP probes hit a declared port, and the port of the program's
// http.conf when the container has one.
func (m *manifest) checkProbes(p *problems, id string, pod *corev1.PodTemplateSpec, c *corev1.Container) {
	httpPort := -1
	if conf, ok := envValue(c, "HTTP_CONFIG"); ok {
		data, err := m.fileOf(pod, c, conf)
		if err != nil {
			p.add("%s: HTTP_CONFIG: %v", id, err)
		} else if cfg, err := loadHTTPConf([]byte(data)); err != nil {
			p.add("%s: %s: %v", id, conf, err)
		} else {
			httpPort = endpointPort(cfg.(*rest.Config).Endpoint)
		}
	}
	for name, probe := range map[string]*corev1.Probe{
		"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe, "startupProbe": c.StartupProbe,
	} {
		if probe == nil || probe.HTTPGet == nil {
			continue
		}
		port, ok := containerPort(c, probe.HTTPGet.Port)
		if !ok {
			p.add("%s: %s port %s is not a port of the container", id, name, probe.HTTPGet.Port.String())
			continue
		}
		if httpPort >= 0 && port != httpPort {
			p.add("%s: %s on port %d, http.conf says %d", id, name, port, httpPort)
		}
	}
}

// containerPort resolves a port number or name against the ports a container declares.
func containerPort(c *corev1.Container, port intstr.IntOrString) (int, bool) {
	for _, cp := range c.Ports {
		if (port.Type == intstr.String && cp.Name == port.StrVal) ||
			(port.Type == intstr.Int && cp.ContainerPort == port.IntVal) {
			return int(cp.ContainerPort), true
		}
	}
	return 0, false
}

// endpointPort is the port of a host:port, or -1.
func endpointPort(endpoint string) int {
	_, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return -1
	}
	return n
}

// checkScript checks the syntax of a container's shell script and that it does not use
// $(...): Kubernetes replaces $(NAME) in commands by environment variables itself.
func checkScript(p *problems, id, script string) {
	if strings.Contains(script, "$(") {
		p.add("%s: script uses $(...), which Kubernetes may expand before the shell sees it", id)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return
	}
	if out, err := exec.Command(sh, "-n", "-c", script).CombinedOutput(); err != nil {
		p.add("%s: script does not parse: %v: %s", id, err, out)
	}
}

// workloadSelectedBy returns the workloads whose pods a service selects.
func (m *manifest) workloadSelectedBy(svc *corev1.Service) []workload {
	var ws []workload
	for _, w := range m.workloads() {
		if len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(w.pod.Labels)) {
			ws = append(ws, w)
		}
	}
	return ws
}

// servicePort resolves a service's target port to the container port of the selected pod.
func servicePort(w workload, target intstr.IntOrString) (int, bool) {
	for i := range w.pod.Spec.Containers {
		if port, ok := containerPort(&w.pod.Spec.Containers[i], target); ok {
			return port, true
		}
	}
	return 0, false
}

func (m *manifest) checkServices(p *problems) {
	for _, svc := range m.services {
		ws := m.workloadSelectedBy(svc)
		if len(ws) != 1 {
			p.add("Service/%s selects %d workloads, want 1", svc.Name, len(ws))
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if _, ok := servicePort(ws[0], sp.TargetPort); !ok {
				p.add("Service/%s port %s: target port %s is not a port of %s", svc.Name, sp.Name, sp.TargetPort.String(), ws[0].id)
			}
			if svc.Spec.Type == corev1.ServiceTypeNodePort && (sp.NodePort < 30000 || sp.NodePort > 32767) {
				p.add("Service/%s port %s: nodePort %d outside the default range 30000-32767", svc.Name, sp.Name, sp.NodePort)
			}
		}
	}
	for _, s := range m.statefulSets {
		if _, ok := m.services[s.Spec.ServiceName]; !ok {
			p.add("StatefulSet/%s: serviceName %s is not a Service of the manifests", s.Name, s.Spec.ServiceName)
		}
	}
}

func (m *manifest) checkRBAC(p *problems) {
	for _, b := range m.clusterRoleBindings {
		if b.RoleRef.Kind != "ClusterRole" {
			p.add("ClusterRoleBinding/%s: roleRef kind %s", b.Name, b.RoleRef.Kind)
		} else if _, ok := m.clusterRoles[b.RoleRef.Name]; !ok {
			p.add("ClusterRoleBinding/%s: ClusterRole %s not in the manifests", b.Name, b.RoleRef.Name)
		}
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind {
				p.add("ClusterRoleBinding/%s: subject kind %s", b.Name, s.Kind)
			} else if _, ok := m.serviceAccounts[s.Name]; !ok || s.Namespace != namespace {
				p.add("ClusterRoleBinding/%s: subject %s/%s is not a ServiceAccount of the manifests", b.Name, s.Namespace, s.Name)
			}
		}
	}
}

// checkEtcdPorts follows the path from an agent to etcd: etcd.conf names the Service
// contiv-etcd (its ClusterIP and port, or with NodePort its node port), whose target is
// the client port etcd listens on; the scripts that wait for etcd use the same address.
// It also checks the security rule of the chart: a NodePort (etcd on every node IP) only
// with TLS and client certificates, on both sides.
func (m *manifest) checkEtcdPorts(p *problems) {
	cm, ok := m.configMaps["contiv-etcd-cfg"]
	svc, ok2 := m.services["contiv-etcd"]
	sts, ok3 := m.statefulSets["contiv-etcd"]
	if !ok || !ok2 || !ok3 {
		p.add("ConfigMap contiv-etcd-cfg, Service contiv-etcd and StatefulSet contiv-etcd are all needed")
		return
	}
	cfg, err := loadEtcdConfFor([]byte(cm.Data["etcd.conf"]), "192.0.2.10")
	if err != nil {
		p.add("contiv-etcd-cfg/etcd.conf: %v", err)
		return
	}
	if len(svc.Spec.Ports) != 1 {
		p.add("Service/contiv-etcd: want one port, got %d", len(svc.Spec.Ports))
		return
	}
	etcdArgs := strings.Join(sts.Spec.Template.Spec.Containers[0].Command, " ")
	tlsServer := strings.Contains(etcdArgs, "--client-cert-auth=true") && strings.Contains(etcdArgs, "--trusted-ca-file=")
	tlsClient := cfg.CertFile != "" && cfg.CAFile != "" && !cfg.InsecureTransport
	if tlsServer != tlsClient {
		p.add("etcd client certificates: etcd requires them %v, etcd.conf presents one %v", tlsServer, tlsClient)
	}
	// Where the agents are told to connect.
	want := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		if !tlsServer {
			p.add("Service/contiv-etcd: NodePort %d exposes etcd on every node without client certificates", svc.Spec.Ports[0].NodePort)
		}
		want = net.JoinHostPort("192.0.2.10", strconv.Itoa(int(svc.Spec.Ports[0].NodePort)))
	case corev1.ServiceTypeClusterIP, "":
		if net.ParseIP(svc.Spec.ClusterIP) == nil {
			p.add("Service/contiv-etcd: clusterIP %q: agents need a fixed address (they start before cluster DNS)", svc.Spec.ClusterIP)
		}
	default:
		p.add("Service/contiv-etcd: type %s: want ClusterIP, or NodePort with TLS", svc.Spec.Type)
	}
	for _, ep := range cfg.Endpoints {
		host := ep
		if rest, ok := strings.CutPrefix(ep, "https://"); ok {
			host = rest
			if !tlsClient {
				p.add("etcd.conf endpoint %s: https without a client certificate", ep)
			}
		} else if tlsClient {
			p.add("etcd.conf endpoint %s: a client certificate but no https", ep)
		}
		if host != want {
			p.add("etcd.conf endpoint %s: want %s (Service contiv-etcd)", ep, want)
		}
	}
	w := workload{id: "StatefulSet/contiv-etcd", selector: sts.Spec.Selector, pod: &sts.Spec.Template}
	target, ok := servicePort(w, svc.Spec.Ports[0].TargetPort)
	if !ok {
		return // reported by checkServices
	}
	listen := -1
	for _, arg := range sts.Spec.Template.Spec.Containers[0].Command {
		if v, ok := strings.CutPrefix(arg, "--listen-client-urls="); ok {
			if u, err := url.Parse(v); err == nil {
				listen, _ = strconv.Atoi(u.Port())
				if (u.Scheme == "https") != tlsServer {
					p.add("StatefulSet/contiv-etcd: client URL %s, client certificates required %v", v, tlsServer)
				}
			}
		}
	}
	if listen != target {
		p.add("StatefulSet/contiv-etcd: etcd listens for clients on port %d, Service contiv-etcd targets %d", listen, target)
	}
	waitAt := want
	if svc.Spec.Type == corev1.ServiceTypeNodePort {
		waitAt = "$host:" + strconv.Itoa(int(svc.Spec.Ports[0].NodePort))
	}
	for _, w := range m.workloads() {
		for i := range w.pod.Spec.InitContainers {
			script, _ := shellScript(&w.pod.Spec.InitContainers[i])
			if strings.Contains(script, "waiting for etcd") && !strings.Contains(script, `etcd="`+waitAt+`"`) {
				p.add("%s container %s waits for etcd elsewhere than %s", w.id, w.pod.Spec.InitContainers[i].Name, waitAt)
			}
		}
	}
}

// checkCNI follows the CNI configuration: the init container that mounts contiv-cni-cfg
// installs every plugin of the chain, and the socket and log file that contiv-cni uses on
// the host are on a host directory that the agent's container mounts at the same path.
func (m *manifest) checkCNI(p *problems) {
	cm, ok := m.configMaps["contiv-cni-cfg"]
	if !ok || len(cm.Data) != 1 {
		p.add("ConfigMap contiv-cni-cfg with one conflist is needed")
		return
	}
	var conflist string
	for _, v := range cm.Data {
		conflist = v
	}
	cfg, err := loadConflist([]byte(conflist))
	if err != nil {
		p.add("contiv-cni-cfg: %v", err)
		return
	}
	c := cfg.(*cniConfig)
	ds, ok := m.daemonSets["contiv-vswitch"]
	if !ok {
		p.add("DaemonSet contiv-vswitch is needed")
		return
	}
	pod := &ds.Spec.Template
	installed := false
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		mountsConflist := false
		for _, vm := range ic.VolumeMounts {
			if v := volume(pod, vm.Name); v != nil && v.ConfigMap != nil && v.ConfigMap.Name == cm.Name {
				mountsConflist = true
			}
		}
		if !mountsConflist {
			continue
		}
		installed = true
		script, _ := shellScript(ic)
		for _, plugin := range append(c.pluginTypes(), "loopback") {
			if !strings.Contains(script, plugin) {
				p.add("init container %s does not install the CNI plugin %s", ic.Name, plugin)
			}
		}
	}
	if !installed {
		p.add("no init container of contiv-vswitch installs the conflist of %s", cm.Name)
	}
	agent := container(pod, "contiv-vswitch")
	if agent == nil {
		p.add("DaemonSet/contiv-vswitch: container contiv-vswitch is needed")
		return
	}
	for key, file := range map[string]string{"grpcServer": c.ContivCNI.GRPCServer, "logFile": c.ContivCNI.LogFile} {
		mnt, _ := mountFor(agent, file)
		if mnt == nil {
			p.add("contiv-cni %s %s: not on a volume of container contiv-vswitch", key, file)
			continue
		}
		v := volume(pod, mnt.Name)
		if v == nil || v.HostPath == nil || v.HostPath.Path != mnt.MountPath {
			p.add("contiv-cni %s %s: volume %s is not the host directory %s", key, file, mnt.Name, mnt.MountPath)
		}
	}
}

// --- tests ---------------------------------------------------------------------------

// documentsByID parses a YAML stream into its objects keyed by "apiVersion Kind ns/name".
func documentsByID(stream string) (map[string]any, error) {
	out := map[string]any{}
	for _, doc := range splitDocuments(stream) {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, err
		}
		if obj == nil {
			continue
		}
		md, _ := obj["metadata"].(map[string]any)
		id := fmt.Sprintf("%v %v %v/%v", obj["apiVersion"], obj["kind"], md["namespace"], md["name"])
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("%s defined twice", id)
		}
		out[id] = obj
	}
	return out, nil
}

// firstDifference shows the first line at which two texts differ.
func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  chart:    %q\n  manifest: %q", i+1, x, y)
		}
	}
	return "(no textual difference)"
}

func TestChartRendersManifest(t *testing.T) {
	docs, err := renderChart(chartDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	rendered := formatManifest(docs)
	if *update {
		if err := os.WriteFile(manifestFile, rendered, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	want, err := documentsByID(string(rendered))
	if err != nil {
		t.Fatalf("chart: %v", err)
	}
	got, err := documentsByID(string(data))
	if err != nil {
		t.Fatalf("%s: %v", manifestFile, err)
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Errorf("%s: rendered by the chart, missing from %s", id, manifestFile)
			continue
		}
		if !reflect.DeepEqual(g, w) {
			wy, _ := yaml.Marshal(w)
			gy, _ := yaml.Marshal(g)
			t.Errorf("%s differs between the chart and %s, %s", id, manifestFile, firstDifference(string(wy), string(gy)))
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("%s: in %s, not rendered by the chart", id, manifestFile)
		}
	}
	if t.Failed() {
		t.Log("regenerate with: go test ./k8s -run TestChartRendersManifest -update")
	}
}

func readManifest(t *testing.T) *manifest {
	t.Helper()
	data, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeManifest(string(data))
	if err != nil {
		t.Fatalf("%s: %v", manifestFile, err)
	}
	return m
}

func TestManifestHasTheContivObjects(t *testing.T) {
	m := readManifest(t)
	want := []string{
		"ConfigMap/contiv-agent-cfg", "ConfigMap/contiv-cni-cfg", "ConfigMap/contiv-etcd-cfg",
		"ConfigMap/contiv-ksr-http-cfg", "ConfigMap/vpp-agent-cfg",
		"ServiceAccount/contiv-ksr", "ClusterRole/contiv-ksr", "ClusterRoleBinding/contiv-ksr",
		"Service/contiv-etcd", "StatefulSet/contiv-etcd",
		"DaemonSet/contiv-ksr", "DaemonSet/contiv-vswitch",
	}
	got := append([]string{}, m.ids...)
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("objects:\n got %v\nwant %v", got, want)
	}
}

func TestStrictDecoderRejectsUnknownFields(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: kube-system}\ndta: {a: b}\n",
		"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x, namespace: kube-system}\nspec:\n  template:\n    spec:\n      hostNetwrk: true\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: kube-system}\ndata: {a: b}\ndata: {a: c}\n",
	} {
		if _, err := decodeManifest(doc); err == nil {
			t.Errorf("decoded without error:\n%s", doc)
		}
	}
}

func TestManifestCrossReferences(t *testing.T) {
	for _, problem := range readManifest(t).check() {
		t.Error(problem)
	}
}

// TestChartOptionsKeepObjectsConsistent renders the chart with other values than the
// defaults (ports, the core-dump option, directories, tags): the objects still decode
// strictly, hold together and carry configuration files the programs accept.
func TestChartOptionsKeepObjectsConsistent(t *testing.T) {
	overrides := map[string]any{
		"images": map[string]any{"vswitch": map[string]any{"tag": "v1.2.3"}, "etcd": map[string]any{"tag": "v3.6.5"}},
		"vswitch": map[string]any{"httpPort": 9998.0, "coreDumps": true,
			"http": map[string]any{"tls": map[string]any{"enabled": true}}},
		"ksr": map[string]any{"httpPort": 9192.0},
		"etcd": map[string]any{"clientPort": 22379.0, "dataDir": "/data/etcd",
			"service": map[string]any{"type": "NodePort", "nodePort": 31379.0},
			"tls":     map[string]any{"enabled": true, "secretName": "my-etcd-tls"}},
		"cni":    map[string]any{"binDir": "/usr/libexec/cni"},
		"config": map[string]any{"logs": map[string]any{"loggers": []any{map[string]any{"name": "controller", "level": "debug"}}}},
	}
	docs, err := renderChart(chartDir, overrides)
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeManifest(string(formatManifest(docs)))
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range m.check() {
		t.Error(problem)
	}
	checkConfigMapFilesLoad(t, m)

	vswitch := m.daemonSets["contiv-vswitch"]
	agent := container(&vswitch.Spec.Template, "contiv-vswitch")
	if agent.Image != "contivvpp/vswitch:v1.2.3" || agent.ReadinessProbe.HTTPGet.Port.IntValue() != 9998 {
		t.Errorf("contiv-vswitch: image %s, readiness port %s", agent.Image, agent.ReadinessProbe.HTTPGet.Port.String())
	}
	if mnt, _ := mountFor(agent, "/var/contiv/dumps/x"); mnt == nil {
		t.Error("coreDumps: contiv-vswitch does not mount /var/contiv/dumps")
	}
	script, _ := shellScript(container(&vswitch.Spec.Template, "vpp-init"))
	if !strings.Contains(script, "core_pattern") {
		t.Error("coreDumps: vpp-init does not set the core pattern")
	}
	if v := volume(&vswitch.Spec.Template, "cni-bin-dir"); v.HostPath.Path != "/usr/libexec/cni" {
		t.Errorf("cni.binDir: volume cni-bin-dir is %s", v.HostPath.Path)
	}
	if port := m.services["contiv-etcd"].Spec.Ports[0]; port.NodePort != 31379 || port.Port != 22379 {
		t.Errorf("Service contiv-etcd: %+v", port)
	}

	// etcd.tls: the etcd server asks for client certificates, its clients present one,
	// all from the Secret.
	etcdConf, err := loadEtcdConfFor([]byte(m.configMaps["contiv-etcd-cfg"].Data["etcd.conf"]), "192.0.2.10")
	if err != nil {
		t.Fatal(err)
	}
	if etcdConf.Endpoints[0] != "https://192.0.2.10:31379" || etcdConf.CertFile != "/etc/etcd-tls/client.crt" || etcdConf.InsecureTransport {
		t.Errorf("etcd.conf with TLS: %+v", *etcdConf)
	}
	for _, w := range []struct {
		pod       *corev1.PodTemplateSpec
		container string
	}{
		{&m.statefulSets["contiv-etcd"].Spec.Template, "contiv-etcd"},
		{&vswitch.Spec.Template, "contiv-vswitch"},
		{&m.daemonSets["contiv-ksr"].Spec.Template, "contiv-ksr"},
	} {
		mnt, _ := mountFor(container(w.pod, w.container), "/etc/etcd-tls/ca.crt")
		if mnt == nil || volume(w.pod, mnt.Name).Secret == nil || volume(w.pod, mnt.Name).Secret.SecretName != "my-etcd-tls" {
			t.Errorf("%s: does not mount Secret my-etcd-tls at /etc/etcd-tls", w.container)
		}
	}

	// vswitch.http.tls: HTTPS probes, mutual TLS for the admin API.
	if agent.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || agent.LivenessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Error("vswitch.http.tls: the probes do not use HTTPS")
	}
	httpConf := mustLoad[*rest.Config](t, m, "vpp-agent-cfg/http.conf")
	if !httpConf.MutualTLS() || httpConf.ServerCertFile != "/etc/contiv-http-tls/server.crt" {
		t.Errorf("vswitch.http.tls: http.conf %+v", *httpConf)
	}
	if mnt, _ := mountFor(agent, "/etc/contiv-http-tls/server.crt"); mnt == nil {
		t.Error("vswitch.http.tls: the agent does not mount its certificates")
	}
}

// TestEtcdNodePortNeedsTLS: the chart refuses to expose etcd on every node without
// client certificates.
func TestEtcdNodePortNeedsTLS(t *testing.T) {
	_, err := renderChart(chartDir, map[string]any{"etcd": map[string]any{"service": map[string]any{"type": "NodePort"}}})
	if err == nil || !strings.Contains(err.Error(), "etcd.service.type NodePort exposes etcd on every node: it needs etcd.tls.enabled") {
		t.Errorf("rendering with an etcd NodePort without TLS: %v", err)
	}
}

// TestAdminAPINotOnTheNodePort runs the REST server with the manifest's http.conf (on a
// free port, its admin socket in a temporary directory): from the node IP, as a pod or
// another node reaches it, the probes, metrics and read-only views answer and the admin
// API (VPP CLI) is refused; on the node's loopback too (a relay or `kubectl
// port-forward` gets there); on the admin socket, root's only, it answers.
func TestAdminAPINotOnTheNodePort(t *testing.T) {
	m := readManifest(t)
	cfg := mustLoad[*rest.Config](t, m, "vpp-agent-cfg/http.conf")
	if cfg.Endpoint != "0.0.0.0:9999" || cfg.MutualTLS() || len(cfg.BasicAuth) > 0 {
		t.Fatalf("http.conf: %+v, want 0.0.0.0:9999 without client certificates", *cfg)
	}
	if cfg.AdminSocket != "/var/run/contiv/admin.sock" || cfg.AdminSocketMode != 0o600 || cfg.AdminOnLoopback {
		t.Fatalf("http.conf: admin socket %q mode %v (admin-on-loopback %v), want /var/run/contiv/admin.sock, 0600, admin on the socket only",
			cfg.AdminSocket, cfg.AdminSocketMode, cfg.AdminOnLoopback)
	}
	nodeIP := nonLoopbackIPv4(t)
	sock := filepath.Join(t.TempDir(), "admin.sock")
	conf := map[string]any{"endpoint": "0.0.0.0:0", "admin-socket": sock, "admin-socket-mode": cfg.AdminSocketMode.String()}
	p := rest.NewPlugin(rest.Deps{Log: quietLogger(), Config: infra.StaticConfig(conf)})
	p.RegisterAdmin("POST /vpp/command", func(w http.ResponseWriter, _ *http.Request) { rest.WriteJSON(w, 200, "ok") })
	p.RegisterPublic("GET /contiv/v1/ipam", func(w http.ResponseWriter, _ *http.Request) { rest.WriteJSON(w, 200, "ipam") })
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("admin socket: %v, %v; want mode 0600", st, err)
	}
	viaSocket := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	_, port, _ := net.SplitHostPort(p.Addr().String())
	for _, tc := range []struct {
		host, method, path string
		client             *http.Client
		want               int
	}{
		{nodeIP, "POST", "/vpp/command", http.DefaultClient, 403},
		{nodeIP, "GET", "/contiv/v1/ipam", http.DefaultClient, 200},
		{nodeIP, "GET", rest.ReadinessPath, http.DefaultClient, 200},
		{nodeIP, "GET", rest.MetricsPath, http.DefaultClient, 200},
		{"127.0.0.1", "POST", "/vpp/command", http.DefaultClient, 403},
		{"localhost", "POST", "/vpp/command", viaSocket, 200},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+net.JoinHostPort(tc.host, port)+tc.path, strings.NewReader(`{"vppclicommand":"show version"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := tc.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s http://%s:%s%s = %d, want %d", tc.method, tc.host, port, tc.path, resp.StatusCode, tc.want)
		}
	}
}

func nonLoopbackIPv4(t *testing.T) string {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address on this machine")
	return ""
}

func quietLogger() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// TestManifestDefaults pins the deployment facts that the agent and upstream Contiv
// documentation rely on.
func TestManifestDefaults(t *testing.T) {
	m := readManifest(t)

	// contiv-vswitch: every node, host network and PIDs, privileged contiv-init.
	ds := m.daemonSets["contiv-vswitch"]
	if ds == nil {
		t.Fatal("no DaemonSet contiv-vswitch")
	}
	pod := &ds.Spec.Template
	if !pod.Spec.HostNetwork || !pod.Spec.HostPID {
		t.Error("contiv-vswitch: want hostNetwork and hostPID")
	}
	tolerateAll := false
	for _, tol := range pod.Spec.Tolerations {
		tolerateAll = tolerateAll || (tol.Key == "" && tol.Operator == corev1.TolerationOpExists && tol.Effect == "")
	}
	if !tolerateAll || len(pod.Spec.NodeSelector) > 0 {
		t.Error("contiv-vswitch: must run on every node (tolerate every taint, no node selector)")
	}
	var inits []string
	for _, c := range pod.Spec.InitContainers {
		inits = append(inits, c.Name)
	}
	if !reflect.DeepEqual(inits, []string{"contiv-cni", "vpp-init"}) {
		t.Errorf("contiv-vswitch init containers %v", inits)
	}
	if c := container(pod, "contiv-cni"); c == nil || c.Image != "contivvpp/cni:latest" {
		t.Errorf("init container contiv-cni: %+v", c)
	}
	if c := container(pod, "vpp-init"); c == nil || c.Image != "contivvpp/vswitch:latest" || c.SecurityContext == nil ||
		c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Errorf("init container vpp-init: want contivvpp/vswitch:latest, privileged")
	}
	agent := container(pod, "contiv-vswitch")
	if agent == nil {
		t.Fatal("no container contiv-vswitch")
	}
	if agent.Image != "contivvpp/vswitch:latest" || !reflect.DeepEqual(agent.Command, []string{"/usr/bin/contiv-init"}) {
		t.Errorf("contiv-vswitch: image %s command %v", agent.Image, agent.Command)
	}
	if agent.SecurityContext == nil || agent.SecurityContext.Privileged == nil || !*agent.SecurityContext.Privileged {
		t.Error("contiv-vswitch: not privileged")
	}
	if cpu := agent.Resources.Requests.Cpu().String(); cpu != "250m" {
		t.Errorf("contiv-vswitch: CPU request %s, want 250m", cpu)
	}
	checkProbe(t, "contiv-vswitch readiness", agent.ReadinessProbe, rest.ReadinessPath, 9999, 15)
	checkProbe(t, "contiv-vswitch liveness", agent.LivenessProbe, rest.LivenessPath, 9999, 60)

	// The agent's configuration files, named the infra way (<NAME>_CONFIG).
	wantEnv := map[string]string{
		"contiv": "/etc/contiv/contiv.conf", "controller": "/etc/contiv/controller.conf",
		"service": "/etc/contiv/service.conf", "govpp": "/etc/vpp-agent/govpp.conf",
		"logs": "/etc/vpp-agent/logs.conf", "http": "/etc/vpp-agent/http.conf",
		"bolt": "/etc/vpp-agent/bolt.conf", "kvscheduler": "/etc/vpp-agent/kvscheduler.conf",
		"etcd": "/tmp/etcd.conf",
	}
	gotEnv := map[string]string{}
	for _, e := range agent.Env {
		switch {
		case strings.HasSuffix(e.Name, "_CONFIG"):
			gotEnv[e.Name] = e.Value
		case e.Name == "MICROSERVICE_LABEL" || e.Name == "HOST_IP":
			want := map[string]string{"MICROSERVICE_LABEL": "spec.nodeName", "HOST_IP": "status.hostIP"}[e.Name]
			if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != want {
				t.Errorf("contiv-vswitch env %s: want the downward API field %s", e.Name, want)
			}
			gotEnv[e.Name] = want
		}
	}
	for name, file := range wantEnv {
		env := infra.NewConfigFile(nil, name).EnvName()
		if gotEnv[env] != file {
			t.Errorf("contiv-vswitch env %s=%q, want %q", env, gotEnv[env], file)
		}
		delete(gotEnv, env)
	}
	delete(gotEnv, "MICROSERVICE_LABEL")
	delete(gotEnv, "HOST_IP")
	if len(gotEnv) > 0 {
		t.Errorf("contiv-vswitch: unexpected configuration variables %v", gotEnv)
	}
	if _, ok := envValue(agent, "MICROSERVICE_LABEL"); ok {
		t.Error("MICROSERVICE_LABEL must come from the downward API")
	}

	// Host directories the agent keeps state in.
	for dir, host := range map[string]string{
		"/var/bolt": "/var/bolt", "/var/run/contiv": "/var/run/contiv", "/run/vpp": "/run/vpp", "/etc/vpp": "/etc/vpp",
	} {
		mnt, rel := mountFor(agent, dir)
		if mnt == nil || rel != "" {
			t.Errorf("contiv-vswitch: no mount at %s", dir)
			continue
		}
		if v := volume(pod, mnt.Name); v == nil || v.HostPath == nil || v.HostPath.Path != host {
			t.Errorf("contiv-vswitch: %s is not the host's %s", dir, host)
		}
	}
	if mnt, _ := mountFor(agent, "/tmp"); mnt == nil || volume(pod, mnt.Name).EmptyDir == nil ||
		volume(pod, mnt.Name).EmptyDir.Medium != corev1.StorageMediumMemory {
		t.Error("contiv-vswitch: /tmp must be an in-memory emptyDir")
	}

	// etcd: one member on a control-plane node, client port 12379 behind a ClusterIP.
	sts := m.statefulSets["contiv-etcd"]
	if sts == nil {
		t.Fatal("no StatefulSet contiv-etcd")
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 || !sts.Spec.Template.Spec.HostNetwork {
		t.Error("contiv-etcd: want one replica on the host network")
	}
	checkControlPlaneOnly(t, "contiv-etcd", &sts.Spec.Template)
	etcdC := sts.Spec.Template.Spec.Containers[0]
	if !strings.HasPrefix(etcdC.Image, "quay.io/coreos/etcd:v3.5.") {
		t.Errorf("contiv-etcd image %s", etcdC.Image)
	}
	if mnt, _ := mountFor(&etcdC, "/var/etcd/contiv-data"); mnt == nil {
		t.Error("contiv-etcd: data directory /var/etcd/contiv-data not mounted")
	}
	args := strings.Join(etcdC.Command, " ")
	for _, want := range []string{"--data-dir=/var/etcd/contiv-data", "--listen-client-urls=http://0.0.0.0:12379", ":12380",
		// A backend quota and periodic compaction (issue #27): a client rewriting a key in a
		// loop is refused writes at 1 GiB instead of filling the disk.
		"--quota-backend-bytes=1073741824", "--auto-compaction-mode=periodic", "--auto-compaction-retention=1h"} {
		if !strings.Contains(args, want) {
			t.Errorf("contiv-etcd command lacks %s: %s", want, args)
		}
	}
	// etcd only inside the cluster network: no NodePort, a fixed ClusterIP; plain HTTP by
	// default (no etcd NodePort without TLS: checked by checkEtcdPorts on every rendering).
	if svc := m.services["contiv-etcd"]; svc == nil || svc.Spec.Type != corev1.ServiceTypeClusterIP ||
		svc.Spec.ClusterIP != "10.96.0.12" || svc.Spec.Ports[0].Port != 12379 || svc.Spec.Ports[0].NodePort != 0 {
		t.Errorf("Service contiv-etcd: want ClusterIP 10.96.0.12:12379 without a node port, got %+v", svc)
	}
	for _, svc := range m.services {
		if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			t.Errorf("Service %s: type %s opens a port on the nodes", svc.Name, svc.Spec.Type)
		}
	}

	// KSR: control-plane nodes, its ServiceAccount, waits for etcd, HTTP on 9191.
	ksr := m.daemonSets["contiv-ksr"]
	if ksr == nil {
		t.Fatal("no DaemonSet contiv-ksr")
	}
	checkControlPlaneOnly(t, "contiv-ksr", &ksr.Spec.Template)
	if ksr.Spec.Template.Spec.ServiceAccountName != "contiv-ksr" {
		t.Errorf("contiv-ksr: ServiceAccount %q", ksr.Spec.Template.Spec.ServiceAccountName)
	}
	if inits := ksr.Spec.Template.Spec.InitContainers; len(inits) != 1 || !strings.Contains(strings.Join(inits[0].Command, " "), `etcd="10.96.0.12:12379"`) {
		t.Error("contiv-ksr: want one init container waiting for etcd at 10.96.0.12:12379")
	}
	ksrC := container(&ksr.Spec.Template, "contiv-ksr")
	if ksrC == nil || ksrC.Image != "contivvpp/ksr:latest" {
		t.Fatalf("contiv-ksr container: %+v", ksrC)
	}
	checkProbe(t, "contiv-ksr readiness", ksrC.ReadinessProbe, rest.ReadinessPath, 9191, -1)
	checkProbe(t, "contiv-ksr liveness", ksrC.LivenessProbe, rest.LivenessPath, 9191, -1)

	// KSR may read (list, watch) what it reflects, and nothing else.
	role := m.clusterRoles["contiv-ksr"]
	if role == nil {
		t.Fatal("no ClusterRole contiv-ksr")
	}
	granted := map[string]bool{}
	for _, r := range role.Rules {
		verbs := append([]string{}, r.Verbs...)
		sort.Strings(verbs)
		if !reflect.DeepEqual(verbs, []string{"list", "watch"}) {
			t.Errorf("ClusterRole contiv-ksr grants %v on %v, want only list and watch", r.Verbs, r.Resources)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				granted[g+"/"+res] = true
			}
		}
	}
	wantGranted := map[string]bool{
		"/pods": true, "/namespaces": true, "/services": true, "/nodes": true,
		"networking.k8s.io/networkpolicies": true, "networking.k8s.io/servicecidrs": true,
		"discovery.k8s.io/endpointslices": true,
	}
	if !reflect.DeepEqual(granted, wantGranted) {
		t.Errorf("ClusterRole contiv-ksr covers %v, want %v", granted, wantGranted)
	}

	// The CNI socket the conflist names is the one the agent serves.
	cfg, err := loadConflist([]byte(m.configMaps["contiv-cni-cfg"].Data["10-contiv-vpp.conflist"]))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.(*cniConfig).ContivCNI.GRPCServer; got != podmanager.DefaultSocketPath {
		t.Errorf("conflist grpcServer %s, the agent serves %s", got, podmanager.DefaultSocketPath)
	}
}

func checkProbe(t *testing.T, what string, p *corev1.Probe, path string, port, initialDelay int) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("%s: no HTTP probe", what)
		return
	}
	if p.HTTPGet.Path != path || p.HTTPGet.Port.IntValue() != port {
		t.Errorf("%s: GET :%s%s, want :%d%s", what, p.HTTPGet.Port.String(), p.HTTPGet.Path, port, path)
	}
	if initialDelay >= 0 && int(p.InitialDelaySeconds) != initialDelay {
		t.Errorf("%s: initial delay %ds, want %ds", what, p.InitialDelaySeconds, initialDelay)
	}
	if p.PeriodSeconds != 3 || p.TimeoutSeconds != 2 || p.FailureThreshold != 3 {
		t.Errorf("%s: period %ds timeout %ds failures %d, want 3s, 2s, 3", what, p.PeriodSeconds, p.TimeoutSeconds, p.FailureThreshold)
	}
}

func checkControlPlaneOnly(t *testing.T, what string, pod *corev1.PodTemplateSpec) {
	t.Helper()
	const label = "node-role.kubernetes.io/control-plane"
	if _, ok := pod.Spec.NodeSelector[label]; !ok {
		t.Errorf("%s: node selector %v, want %s", what, pod.Spec.NodeSelector, label)
	}
	tolerated := false
	for _, tol := range pod.Spec.Tolerations {
		tolerated = tolerated || (tol.Key == label && tol.Operator == corev1.TolerationOpExists)
	}
	if !tolerated {
		t.Errorf("%s: does not tolerate the %s taint", what, label)
	}
}

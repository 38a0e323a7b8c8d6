// Package k8s holds the Kubernetes deployment of Contiv-VPP and its checks; it has no code
// of its own.
//
//   - contiv-vpp.yaml: every object of a cluster installation (all in kube-system),
//     rendered from the Helm chart contiv-vpp/ with its default values;
//   - contiv-vpp/: the Helm chart (Chart.yaml, values.yaml, templates/);
//   - examples/: configuration files for running the agent outside Kubernetes.
//
// The tests render the chart the way `helm template` does (for the subset of Helm the
// chart uses, see helm_test.go) and compare the result with contiv-vpp.yaml; decode every
// object strictly with the Kubernetes API types; read every ConfigMap file with the
// agent's own configuration loaders in strict mode; and check the references between the
// objects (volumes, ConfigMaps, ports, configuration paths) and the images under docker/.
//
// After a change to the chart, regenerate contiv-vpp.yaml with
//
//	go test ./k8s -run TestChartRendersManifest -update
package k8s

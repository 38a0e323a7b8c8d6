package lab

import (
	"crypto/sha256"
	"encoding/hex"
	"os"

	corev1 "k8s.io/api/core/v1"

	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// podNetnsName names the pod's network namespace so that its path fits the
// podmanager.MaxNetnsPathLen bytes the agent accepts (VPP's limit for a TAP's host
// namespace), whatever the pod's namespace (up to 63 characters) and name (up to 253):
// "<lab prefix>-<namespace>-<name>" when that fits and is free (so a user finds a pod's
// namespace by its name), else "<lab prefix>-<the start of namespace-name>-<hash>", the
// hash (12 hex digits) of the namespace, the name and the UID keeping names apart.
func podNetnsName(prefix string, pod *corev1.Pod) string {
	name := prefix + "-" + pod.Namespace + "-" + pod.Name
	if len(netnsPath(name)) <= podmanager.MaxNetnsPathLen && !netnsExists(name) {
		return name
	}
	sum := sha256.Sum256([]byte(pod.Namespace + "/" + pod.Name + "/" + string(pod.UID)))
	hash := hex.EncodeToString(sum[:6])
	room := podmanager.MaxNetnsPathLen - len(netnsPath(prefix+"--"+hash))
	readable := pod.Namespace + "-" + pod.Name
	if len(readable) > room {
		readable = readable[:max(room, 0)]
	}
	return prefix + "-" + readable + "-" + hash
}

// netnsExists tells whether a network namespace of that name exists.
func netnsExists(name string) bool {
	_, err := os.Stat(netnsPath(name))
	return err == nil
}

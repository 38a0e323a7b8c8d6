#!/bin/sh
# Installs contiv-cni, loopback and portmap and the Contiv-VPP network configuration on the
# node, for running the image by hand, e.g.
#
#   docker run --rm -v /opt/cni/bin:/host/cni/bin -v /etc/cni/net.d:/host/cni/net.d \
#     -v $PWD/10-contiv-vpp.conflist:/etc/contiv-cni/10-contiv-vpp.conflist:ro contivvpp/cni
#
# The contiv-vswitch DaemonSet runs the same steps inline in its contiv-cni init container
# (k8s/contiv-vpp/templates/vswitch.yaml), where they are visible to the operator.
set -eu

bin_dir=${CNI_BIN_DIR:-/host/cni/bin}
net_dir=${CNI_NET_DIR:-/host/cni/net.d}
conflist=${CNI_CONFLIST:-/etc/contiv-cni/10-contiv-vpp.conflist}
name=$(basename "$conflist")

# Binaries first, each replaced by a rename, so that the runtime never executes a
# half-written plugin.
for plugin in contiv-cni loopback portmap; do
  cp "/opt/contiv-cni/bin/$plugin" "$bin_dir/.$plugin.tmp"
  chmod 0755 "$bin_dir/.$plugin.tmp"
  mv -f "$bin_dir/.$plugin.tmp" "$bin_dir/$plugin"
done

# Contiv-VPP is the node's only pod network: other configurations go.
for conf in "$net_dir"/*; do
  case "$conf" in
    */"$name") ;;
    *.conf|*.conflist|*.json) rm -f "$conf" ;;
  esac
done
cp "$conflist" "$net_dir/.$name.tmp"
mv -f "$net_dir/.$name.tmp" "$net_dir/$name"
echo "installed contiv-cni, loopback, portmap and $name"

package main

import (
	"os"

	"github.com/contiv-vpp/contiv-vpp/pkg/version"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cniplugin"
)

func main() {
	os.Exit(cniplugin.Main(version.String("contiv-cni") + ": the CNI plugin of Contiv-VPP; it forwards to the contiv agent"))
}

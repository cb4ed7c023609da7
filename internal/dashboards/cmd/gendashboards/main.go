// Command gendashboards writes protobench's Grafana dashboards (internal/dashboards) as JSON files,
// by default into dashboards/ at the repository root, where Grafana's provisioning reads them.
//
//	go run ./internal/dashboards/cmd/gendashboards [-out dashboards]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/protobench/protobench/internal/dashboards"
)

func main() {
	out := flag.String("out", "dashboards", "directory to write the dashboard JSON files into")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "gendashboards: unexpected argument %q (only -out DIR is accepted)\n", flag.Arg(0))
		os.Exit(2)
	}
	paths, err := dashboards.Write(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendashboards:", err)
		os.Exit(1)
	}
	for _, p := range paths {
		fmt.Println(p)
	}
}

package main

import (
	"github.com/protobench/protobench/internal/compare"
	"github.com/protobench/protobench/internal/doctor"
	"github.com/protobench/protobench/internal/gate"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/loadgen/loadcmd"
	"github.com/protobench/protobench/internal/runner"

	// Tool adapters register themselves with internal/tool.
	_ "github.com/protobench/protobench/internal/tool/all"
)

func init() {
	register("run", "run a scenario: protobench run <name|file.yaml> [--quick] [--dry-run] ...", runner.Command)
	register("doctor", "the pre-flight check: CPU layout, power and governor, other load, disk, Docker's limits, registry", doctor.Command)
	register("list", "list the scenarios with their estimated time", runner.ListCommand)
	register("load", "our load generator: protobench load --target grpc://host:port ...", loadcmd.Command)
	register("images", "build or list the container images (pull where a registry answers)", images.Command)
	register("down", "stop the stack a --keep-up run left running", runner.DownCommand)
	register("status", "how many runs of a results folder are done, and the command that finishes it", runner.StatusCommand)
	register("report", "rewrite summary.md, results.csv and report.html of a results folder", runner.ReportCommand)
	register("gate", "CI regression gate: protobench gate --base IMAGE|Dockerfile --head IMAGE|Dockerfile --fail-if-slower 5%", gate.Command(runner.Command))
	register("compare", "compare results folders: protobench compare [flags] A B [C ...] | A1 A2 vs B1 B2", compare.Command)
}

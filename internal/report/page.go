package report

import "html/template"

// PageCSS styles a report page around its charts (compare.html uses it too). System fonts
// only: nothing is fetched.
const PageCSS = `body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:0 16px 48px;color:#222}
h1{font-size:24px;margin:24px 0 4px}h2{font-size:19px;margin:32px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:15px;margin:20px 0 6px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}th{background:#f5f5f5}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.status{background:#fff4d6;border:1px solid #e6c35c;padding:6px 10px;margin:10px 0}
.grid{display:flex;flex-wrap:wrap;gap:12px}.grid figure{flex:1 1 440px;max-width:640px}
figure{margin:8px 0}figcaption{font-size:12px;color:#555}
.badge{font-size:11px;background:#0072B2;color:#fff;border-radius:3px;padding:1px 5px;vertical-align:middle}
.muted{color:#666}tr:target{background:#fff4d6}section:target h2{background:#fff4d6}
nav a{margin-right:10px}code{font-size:12px}`

var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>{{.CSS}}</style>
</head><body>
<h1>{{.Title}}</h1>
{{with .Description}}<p>{{.}}</p>{{end}}
{{with .Status}}<p class="status">{{.}}</p>{{end}}
{{with .PlanNote}}<p class="status">{{.}}</p>{{end}}
{{with .Answer}}<section id="answer"><h2>The answer</h2><ul>
<li><b>Throughput, {{.Pair}}</b> (<a href="#ratios">{{.Step}}</a>): {{.Paired}} paired; unpaired {{.Unpaired}}.{{with .Flags}} <b>Rests on flagged runs: {{.}}.</b>{{end}}</li>
<li><b>Latency at equal load</b> (<a href="#{{$.EqualLoadID}}">table</a>): {{.Latency}}</li>
{{range .Why}}<li>Why: {{.Text}} (<a href="#{{.Anchor}}">detail</a>)</li>{{end}}
</ul></section>{{end}}
<nav>{{if .Answer}}<a href="#answer">answer</a><a href="#ratios">ratios</a>{{end}}{{if or .EqualLoad .NoEqualLoad}}<a href="#{{.EqualLoadID}}">latency at equal load</a>{{end}}{{range .Sections}}<a href="#{{.ID}}">{{.Name}}</a>{{end}}{{if .CPU}}<a href="#cpu">CPU per request</a>{{end}}{{if .Published}}<a href="#published">published vs ours</a>{{end}}<a href="#flags">flags</a><a href="#raw">raw files</a><a href="#run">run</a></nav>
{{if .Ratios}}<section id="ratios"><h2>Ratios between targets</h2>
<p>One target over the step's baseline, same tool. Paired: the geometric mean of the ratios of the two targets' runs in the same repeat (run one after the other, in shuffled order), with a t interval on the log ratios. Unpaired: the ratio of geometric means over all repeats, with Welch's t interval on the logs. Each interval says its method, coverage and n. Flags are those of the runs beneath the ratio.</p>
<table><tr><th>Step</th><th>Tool</th><th>Ratio</th><th>Throughput, paired</th><th>Throughput, unpaired</th><th>p99, paired</th><th>p99, unpaired</th><th>Flags beneath</th></tr>
{{range .Ratios}}<tr><td><a href="#{{.StepID}}">{{.Step}}</a></td><td>{{.Tool}}</td><td>{{.Pair}}</td><td class="n">{{.RPSPaired}}</td><td class="n">{{.RPS}}</td><td class="n">{{.P99Paired}}</td><td class="n">{{.P99}}</td><td>{{if .Flags}}<b>{{.Flags}}</b>{{end}}</td></tr>
{{end}}</table></section>{{end}}
{{with .NoEqualLoad}}<section id="{{$.EqualLoadID}}"><h2>Latency at equal load</h2><p>Latency at equal load is {{.}}</p></section>{{end}}
<section id="run"><h2>Where it ran</h2>
<table>{{range .Meta}}<tr><th>{{.Key}}</th><td>{{.Value}}</td></tr>{{end}}</table>
{{if .Images}}<details><summary>{{len .Images}} images</summary><table>{{range .Images}}<tr><th>{{.Key}}</th><td>{{.Value}}</td></tr>{{end}}</table></details>{{end}}
{{if .Notes}}<h3>Notes</h3><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
</section>
{{with .EqualLoad}}<section id="{{.ID}}"><h2>Latency at equal load</h2>
<p>{{.Intro}}</p>
<div class="grid">{{range .Charts}}<figure>{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}</div>
<table><tr><th>Load</th><th>Offered req/s</th><th>Target</th><th>n</th><th>Achieved req/s</th><th>p50 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>CPU µs/req</th><th title="the server's cores' busy time (user, system, softirq, irq) per request">core µs/req</th><th>Incomplete</th><th>Flags</th></tr>
{{range .Rows}}<tr><td class="n">{{.Load}}</td><td class="n">{{.Offered}}</td><td>{{.Target}}</td><td class="n">{{.N}}</td><td class="n">{{.Achieved}}</td><td class="n">{{.P50}}</td><td class="n">{{.P99}}</td><td class="n">{{.P999}}</td><td class="n">{{.CPU}}</td><td class="n">{{.Core}}</td><td class="n">{{.Incomplete}}</td><td>{{.Flags}}</td></tr>
{{end}}</table>
{{if .Witnesses}}<h3>Cross-check</h3>
<p>{{.WitnessIntro}}</p>
<table><tr><th>Load</th><th>Offered req/s</th><th>Target</th><th>Witness</th><th>ours p50 ms</th><th>its p50 ms</th><th>ours p99 ms</th><th>its p99 ms</th><th>n (ours, its)</th><th>Verdict</th></tr>
{{range .Witnesses}}<tr><td class="n">{{.Load}}</td><td class="n">{{.Offered}}</td><td>{{.Target}}</td><td>{{.Tool}}</td><td class="n">{{.OursP50}}</td><td class="n">{{.ItsP50}}</td><td class="n">{{.OursP99}}</td><td class="n">{{.ItsP99}}</td><td class="n">{{.N}}</td><td>{{.Verdict}}</td></tr>
{{end}}</table>{{end}}
</section>{{end}}
{{range .Sections}}
<section id="{{.ID}}">
<h2>{{.Name}} {{if .Headline}}<span class="badge">headline</span>{{end}}{{if .Matrix}}<span class="badge">matrix</span>{{end}}</h2>
{{with .Description}}<p>{{.}}</p>{{end}}
{{with .Workload}}<p class="muted">{{.}}</p>{{end}}
<div class="grid">{{range .Charts}}<figure>{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}</div>
<table><tr><th>Step</th><th>Target</th><th>Tool</th><th>Workload</th><th>n</th><th>req/s (interval)</th><th>p99 ms (interval)</th><th>Interval of the median</th><th>CPU µs/req</th><th title="how the server's cores spent the window (node-exporter), medians over the repeats; softirq is the kernel's deferred work, mostly packet handling">server cores % user / sys / softirq / idle</th><th>Flags</th></tr>
{{range .Variants}}<tr id="{{.ID}}"><td>{{.Name}}</td><td>{{.Target}}</td><td>{{.Tool}}</td><td>{{.Workload}}</td><td class="n">{{.N}}</td><td class="n">{{.Throughput}}</td><td class="n">{{.P99}}</td><td>{{.Interval}}</td><td class="n">{{.CPU}}</td><td class="n">{{.Cores}}</td><td>{{.Flags}}</td></tr>
{{end}}</table>
{{if .Spectra}}<h3>Latency spectrum</h3><div class="grid">{{range .Spectra}}<figure>{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}</div>{{end}}
<h3>Per second</h3>
{{if .Timelines}}<div class="grid">{{range .Timelines}}<figure>{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}</div>{{end}}
{{if .NoSeconds}}<ul class="muted">{{range .NoSeconds}}<li>{{.}}</li>{{end}}</ul>{{end}}
</section>
{{else}}
<p>No step has a measurement yet.</p>
{{end}}
{{if .CPU}}<section id="cpu"><h2>Server CPU per request</h2><figure>{{.CPU}}<figcaption>Median over repeats of server CPU-seconds / requests, whiskers the exact order-statistic interval of the median (75 % at n=3, 93.8 % at n=5); our generator's runs where it ran.</figcaption></figure></section>{{end}}
{{if .Published}}<section id="published"><h2>Published vs ours</h2>
<p>{{.PublishedHow}}</p>
<p>A verdict (consistent, ours higher, ours lower) needs our interval to cover at least 95 %: a median's exact interval does from 6 repeats, a gain's t interval from 2 repeats. Below that the row says there is no verdict; docs/statistics.md has the A/A test of the rule.</p>
<table><tr><th>Figure</th><th>Measures</th><th>Published</th><th>Ours</th><th>Ours / published</th><th>Our step</th><th>Verdict</th><th>Note</th></tr>
{{range .Published}}<tr><td>{{.Name}}</td><td>{{.Measures}}</td><td class="n">{{.Published}}</td><td class="n">{{.Ours}}</td><td class="n">{{.Ratio}}</td><td>{{.Step}}</td><td>{{.Verdict}}</td><td>{{.Note}}</td></tr>
{{end}}</table>
{{if .Differences}}<p>How the article's method differs from ours:</p><ul>{{range .Differences}}<li>{{.}}</li>{{end}}</ul>{{end}}
</section>{{end}}
<section id="flags"><h2>Flags</h2>
<table><tr><th>Flag</th><th>Meaning</th><th>Raised on (step, target, tool × repeats)</th></tr>
{{range .Flags}}<tr><td><code>{{.Flag}}</code></td><td>{{.Meaning}}</td><td>{{if .Raised}}{{.Where}}{{else}}<span class="muted">not raised</span>{{end}}</td></tr>
{{end}}</table></section>
<section id="raw"><h2>Raw files</h2>
<p>Every tool's own output, untouched; <a href="results.json">results.json</a>, <a href="results.csv">results.csv</a>, <a href="summary.md">summary.md</a>, <a href="run.json">run.json</a> and <a href="scenario.yaml">scenario.yaml</a> sit beside this page.</p>
<details><summary>{{len .Raw}} files under raw/</summary><ul>{{range .Raw}}<li><a href="{{.}}">{{.}}</a></li>{{end}}</ul></details>
</section>
</body></html>
`))

// Package dashboards builds protobench's Grafana dashboards as code.
//
// Every panel comes from one builder function that starts from shared panel defaults, every
// dashboard has a stable uid, and every query names the Prometheus datasource by its provisioned uid
// (DatasourceUID) rather than by name, so the JSON works on any Grafana that provisions that
// datasource. The generated JSON is committed under dashboards/ (see Write and the gendashboards
// command); a test fails when the committed files differ from what the code generates.
//
// Queries lists every PromQL expression with the Grafana variables replaced by concrete values, so
// that prom.Check can execute them against a real Prometheus even where Grafana itself cannot
// run.
package dashboards

// The JSON model below is the "classic" dashboard model (Grafana 10 and 11 read and write it; Grafana
// 12+ still imports it). Field order follows Grafana's own export so that diffs of the generated
// files look like diffs of an exported dashboard.

// SchemaVersion is the dashboard schema version the generated JSON declares: 41 is what the pinned
// Grafana (11.6, internal/images.UpstreamGrafana) writes, so it loads the files without migrating
// them; earlier Grafanas would not understand it.
const SchemaVersion = 41

// DatasourceUID is the uid the Grafana provisioning gives the Prometheus datasource. Pinning the uid
// (not the name) keeps the dashboards working whatever the datasource is called.
const DatasourceUID = "protobench-prometheus"

// Datasource is a reference to a Grafana datasource by type and uid.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// prometheus is the datasource every panel, target and variable uses.
var prometheus = Datasource{Type: "prometheus", UID: DatasourceUID}

// Dashboard is one Grafana dashboard.
type Dashboard struct {
	Annotations   Annotations `json:"annotations"`
	Description   string      `json:"description"`
	Editable      bool        `json:"editable"`
	GraphTooltip  int         `json:"graphTooltip"`
	Links         []Link      `json:"links"`
	Panels        []Panel     `json:"panels"`
	Refresh       string      `json:"refresh"`
	SchemaVersion int         `json:"schemaVersion"`
	Tags          []string    `json:"tags"`
	Templating    Templating  `json:"templating"`
	Time          TimeRange   `json:"time"`
	Timepicker    Timepicker  `json:"timepicker"`
	Timezone      string      `json:"timezone"`
	Title         string      `json:"title"`
	UID           string      `json:"uid"`
	Version       int         `json:"version"`
}

// Annotations holds the dashboard's annotation queries.
type Annotations struct {
	List []Annotation `json:"list"`
}

// Annotation is one annotation query: Grafana's built-in one, or a Prometheus query whose series
// become regions (protobench_step_info, one region per step).
type Annotation struct {
	BuiltIn    int        `json:"builtIn,omitempty"`
	Datasource Datasource `json:"datasource"`
	Enable     bool       `json:"enable"`
	Hide       bool       `json:"hide"`
	IconColor  string     `json:"iconColor"`
	Name       string     `json:"name"`
	Target     *Target    `json:"target,omitempty"`
	Type       string     `json:"type,omitempty"`
	// PrometheusAnnotationOptions are read by Grafana's Prometheus datasource from the annotation
	// itself; the dashboard schema does not list them (see TestDashboardsDecodeStrictly).
	PrometheusAnnotationOptions
}

// PrometheusAnnotationOptions turn a Prometheus series into an annotation's title and tags.
type PrometheusAnnotationOptions struct {
	TagKeys         string `json:"tagKeys,omitempty"`
	TextFormat      string `json:"textFormat,omitempty"`
	TitleFormat     string `json:"titleFormat,omitempty"`
	UseValueForTime *bool  `json:"useValueForTime,omitempty"`
}

// prometheusAnnotationKeys are the JSON names of PrometheusAnnotationOptions.
var prometheusAnnotationKeys = []string{"tagKeys", "textFormat", "titleFormat", "useValueForTime"}

// Link is a dashboard link shown in the top bar.
type Link struct {
	AsDropdown  bool     `json:"asDropdown"`
	Icon        string   `json:"icon"`
	IncludeVars bool     `json:"includeVars"`
	KeepTime    bool     `json:"keepTime"`
	Tags        []string `json:"tags"`
	Title       string   `json:"title"`
	Tooltip     string   `json:"tooltip"`
	Type        string   `json:"type"`
}

// Panel is a panel or a row. Rows have no datasource, targets or field config.
type Panel struct {
	Collapsed   *bool        `json:"collapsed,omitempty"`
	Datasource  *Datasource  `json:"datasource,omitempty"`
	Description string       `json:"description,omitempty"`
	FieldConfig *FieldConfig `json:"fieldConfig,omitempty"`
	GridPos     GridPos      `json:"gridPos"`
	ID          int          `json:"id"`
	Options     any          `json:"options,omitempty"`
	Panels      *[]Panel     `json:"panels,omitempty"` // rows only: Grafana's schema requires the list on a row
	Targets     []Target     `json:"targets,omitempty"`
	Title       string       `json:"title"`
	// Transformations reshape query results, e.g. merging the step-summary queries into one table.
	Transformations []Transformation `json:"transformations,omitempty"`
	Type            string           `json:"type"`
}

// Transformation is one of a panel's data transformations.
type Transformation struct {
	ID      string `json:"id"`
	Options any    `json:"options"`
}

// GridPos places a panel on Grafana's 24-column grid.
type GridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// FieldConfig carries a panel's units, limits and drawing style.
type FieldConfig struct {
	Defaults  FieldDefaults `json:"defaults"`
	Overrides []Override    `json:"overrides"`
}

// FieldDefaults apply to every series of a panel.
type FieldDefaults struct {
	Color    FieldColor `json:"color"`
	Custom   any        `json:"custom"` // FieldCustom for time series, TableCustom for tables
	Decimals *int       `json:"decimals,omitempty"`
	Max      *float64   `json:"max,omitempty"`
	Min      *float64   `json:"min,omitempty"`
	Unit     string     `json:"unit"`
}

// FieldColor selects the colour scheme.
type FieldColor struct {
	Mode string `json:"mode"`
}

// FieldCustom is the time-series panel's drawing style.
type FieldCustom struct {
	AxisSoftMin *float64    `json:"axisSoftMin,omitempty"`
	DrawStyle   string      `json:"drawStyle"`
	FillOpacity int         `json:"fillOpacity"`
	LineWidth   int         `json:"lineWidth"`
	ShowPoints  string      `json:"showPoints"`
	SpanNulls   bool        `json:"spanNulls"`
	Stacking    Stacking    `json:"stacking"`
	ScaleDistr  ScaleDistro `json:"scaleDistribution"`
}

// TableCustom is the table panel's per-field display.
type TableCustom struct {
	Align       string      `json:"align"`
	CellOptions CellOptions `json:"cellOptions"`
	Inspect     bool        `json:"inspect"`
}

// CellOptions selects how a table cell is drawn.
type CellOptions struct {
	Type string `json:"type"`
}

// TableOptions are the table panel's options.
type TableOptions struct {
	CellHeight string            `json:"cellHeight"`
	Footer     TableFooter       `json:"footer"`
	FrameIndex int               `json:"frameIndex"`
	ShowHeader bool              `json:"showHeader"`
	SortBy     []TableSortByItem `json:"sortBy"`
}

// TableFooter configures the table's summary footer.
type TableFooter struct {
	CountRows bool     `json:"countRows"`
	Fields    []string `json:"fields,omitempty"`
	Reducer   []string `json:"reducer"`
	Show      bool     `json:"show"`
}

// TableSortByItem is a column the table sorts by.
type TableSortByItem struct {
	Desc        bool   `json:"desc"`
	DisplayName string `json:"displayName"`
}

// Stacking says whether series stack on each other.
type Stacking struct {
	Group string `json:"group"`
	Mode  string `json:"mode"`
}

// ScaleDistro is the y-axis scale (linear or log).
type ScaleDistro struct {
	Log  int    `json:"log,omitempty"`
	Type string `json:"type"`
}

// Override changes field settings for series matching a matcher.
type Override struct {
	Matcher    Matcher    `json:"matcher"`
	Properties []Property `json:"properties"`
}

// Matcher selects series, e.g. by the query's refId.
type Matcher struct {
	ID      string `json:"id"`
	Options string `json:"options"`
}

// Property is one overridden field setting.
type Property struct {
	ID    string `json:"id"`
	Value any    `json:"value"`
}

// Options are the time-series panel's legend and tooltip settings.
type Options struct {
	Legend  Legend  `json:"legend"`
	Tooltip Tooltip `json:"tooltip"`
}

// Legend configures the panel legend.
type Legend struct {
	Calcs       []string `json:"calcs"`
	DisplayMode string   `json:"displayMode"`
	Placement   string   `json:"placement"`
	ShowLegend  bool     `json:"showLegend"`
}

// Tooltip configures the hover tooltip.
type Tooltip struct {
	Mode string `json:"mode"`
	Sort string `json:"sort"`
}

// Target is one PromQL query of a panel.
type Target struct {
	Datasource   Datasource `json:"datasource"`
	EditorMode   string     `json:"editorMode"`
	Expr         string     `json:"expr"`
	Format       string     `json:"format,omitempty"`
	Instant      bool       `json:"instant,omitempty"`
	Interval     string     `json:"interval,omitempty"`
	LegendFormat string     `json:"legendFormat"`
	Range        bool       `json:"range"`
	RefID        string     `json:"refId"`
	// expect says for which steps this query must return data (the end-to-end test checks it).
	expect Expect
}

// Templating holds the dashboard's variables.
type Templating struct {
	List []Variable `json:"list"`
}

// Variable is a query variable filled from Prometheus label values.
type Variable struct {
	AllValue    string        `json:"allValue"`
	Current     Current       `json:"current"`
	Datasource  Datasource    `json:"datasource"`
	Definition  string        `json:"definition"`
	Hide        int           `json:"hide"`
	IncludeAll  bool          `json:"includeAll"`
	Label       string        `json:"label"`
	Multi       bool          `json:"multi"`
	Name        string        `json:"name"`
	Options     []any         `json:"options"`
	Query       VariableQuery `json:"query"`
	Refresh     int           `json:"refresh"`
	Regex       string        `json:"regex"`
	SkipURLSync bool          `json:"skipUrlSync"`
	Sort        int           `json:"sort"`
	Type        string        `json:"type"`
}

// Current is a variable's selected value.
type Current struct {
	Selected bool     `json:"selected"`
	Text     []string `json:"text"`
	Value    []string `json:"value"`
}

// VariableQuery is the Prometheus datasource's variable query (qryType 1 = classic query string).
type VariableQuery struct {
	QryType int    `json:"qryType"`
	Query   string `json:"query"`
	RefID   string `json:"refId"`
}

// TimeRange is the dashboard's default time range.
type TimeRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Timepicker lists the refresh intervals offered.
type Timepicker struct {
	RefreshIntervals []string `json:"refresh_intervals"`
}

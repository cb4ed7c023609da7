package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"

	"github.com/protobench/protobench/internal/swarm"
)

// Prometheus on a monitor node other than this one must be published for the runner to reach
// it, and swarm publishes a port on every interface of the node (a published port has no host
// address). So that nobody else on the LAN reads the run's metrics or writes series into them
// through its remote-write receiver (which the runner's step series and k6 need), that
// Prometheus asks every request for a password made for the run: its web configuration, a
// bcrypt hash of it, travels as a swarm secret, the runner's URL carries it (run.json records
// the URL without it), and the tools get it in k6's remote-write settings.

// promUser is the user name of a published Prometheus' basic auth.
const promUser = "protobench"

// promWebConfig is the target of Prometheus' web configuration in its task.
const promWebConfig = "/etc/prometheus/web.yml"

// webConfig is the part of Prometheus' --web.config.file the run sets.
type webConfig struct {
	BasicAuthUsers map[string]string `yaml:"basic_auth_users"`
}

// newPromPassword makes a password for one run: 24 random bytes, URL-safe.
func newPromPassword() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// renderWebConfig is Prometheus' web configuration asking for user and password.
func renderWebConfig(user, password string) ([]byte, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(webConfig{BasicAuthUsers: map[string]string{user: string(hash)}})
}

// publishPrometheus publishes spec, Prometheus, on the monitor node behind a password, and
// sets the URL the runner reaches it by.
func (s *Swarm) publishPrometheus(ctx context.Context, spec *swarm.ServiceSpec, monitor swarm.Node) error {
	password, err := newPromPassword()
	if err != nil {
		return fmt.Errorf("Prometheus' password: %w", err)
	}
	web, err := renderWebConfig(promUser, password)
	if err != nil {
		return fmt.Errorf("Prometheus' web configuration: %w", err)
	}
	name, err := s.sw.CreateSecret(ctx, "prometheus-web", web)
	if err != nil {
		return fmt.Errorf("Prometheus' web configuration: %w", err)
	}
	// A bcrypt hash: readable by whichever user the image runs Prometheus as.
	spec.Secrets = append(spec.Secrets, swarm.SecretMount{Secret: name, Target: promWebConfig, Mode: 0o444})
	spec.Args = append(spec.Args, "--web.config.file="+promWebConfig)
	port, _ := strconv.Atoi(PortSetting("PROTOBENCH_PROMETHEUS_PORT", "9090"))
	spec.PublishHost = append(spec.PublishHost, swarm.PortMap{Published: port, Target: 9090})
	spec.Constraints = append(spec.Constraints, "node.id=="+monitor.ID)
	u := url.URL{Scheme: "http", Host: fmt.Sprintf("%s:%d", monitor.Addr, port), User: url.UserPassword(promUser, password)}
	s.promPublished, s.promPassword = u.String(), password
	return nil
}

// promToolEnv is what a tool needs to write to a published Prometheus: k6's remote-write
// output takes the user and password from these (the tools that do not write ignore them).
func (s *Swarm) promToolEnv(spec *swarm.ServiceSpec) {
	if s.promPassword == "" {
		return
	}
	if spec.Env == nil {
		spec.Env = map[string]string{}
	}
	spec.Env["K6_PROMETHEUS_RW_USERNAME"] = promUser
	spec.Env["K6_PROMETHEUS_RW_PASSWORD"] = s.promPassword
}

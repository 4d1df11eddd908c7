package main

import (
	"encoding/json"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/strata-store/strata/internal/testenv"
)

// The deployment files in docker/ are checked here, next to the binary whose flags they set (no
// Docker engine runs on the development machines): the compose file's services and wiring, the
// STRATA_* variables against real flags, Prometheus' targets against the services' ports, and the
// Grafana dashboard's queries against the metrics the code registers.

type composeFile struct {
	Services map[string]struct {
		Image       string `yaml:"image"`
		Build       *struct{ Context, Dockerfile string }
		Command     []string          `yaml:"command"`
		Entrypoint  []string          `yaml:"entrypoint"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		Ports       []string          `yaml:"ports"`
		DependsOn   yaml.Node         `yaml:"depends_on"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

func dockerDir() string { return filepath.Join(testenv.RepoRoot(), "docker") }

func loadCompose(t *testing.T) composeFile { return loadComposeFile(t, "docker-compose.yml") }

func loadComposeFile(t *testing.T, name string) composeFile {
	data, err := os.ReadFile(filepath.Join(dockerDir(), name))
	require.NoError(t, err)
	var c composeFile
	require.NoError(t, yaml.Unmarshal(data, &c))
	return c
}

// flagsOf returns the flag names of a strata subcommand.
func flagsOf(t *testing.T, sub string) map[string]bool {
	for _, c := range rootCommand().Commands() {
		if c.Name() == sub {
			names := map[string]bool{}
			c.Flags().VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
			return names
		}
	}
	t.Fatalf("no subcommand %q", sub)
	return nil
}

func TestComposeFileDescribesTheCluster(t *testing.T) {
	c := loadCompose(t)
	var names []string
	for n := range c.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	require.Equal(t, []string{"grafana", "postgresql", "prometheus", "s3", "strata-api-1", "strata-api-2", "strata-maintenance",
		"temporal", "temporal-ui"}, names)

	build := c.Services["strata-api-1"].Build
	require.NotNil(t, build, "strata-api-1 builds the image")
	_, err := os.Stat(filepath.Join(dockerDir(), build.Context, build.Dockerfile))
	require.NoError(t, err, "the Dockerfile the compose file builds exists")

	temporal := c.Services["temporal"]
	require.Equal(t, "postgres12", temporal.Environment["DB"], "Temporal persists in the cluster's PostgreSQL")
	require.Equal(t, "postgresql", temporal.Environment["POSTGRES_SEEDS"])
	require.Equal(t, "temporal:7233", c.Services["temporal-ui"].Environment["TEMPORAL_ADDRESS"])

	for name, want := range map[string]string{"strata-api-1": "serve", "strata-api-2": "serve", "strata-maintenance": "worker"} {
		s := c.Services[name]
		require.Equal(t, "strata:local", s.Image, name)
		require.Equal(t, []string{want}, s.Command, name)
		require.Empty(t, s.Volumes, "%s shares no disk: its data is in S3", name)
		require.True(t, strings.HasPrefix(s.Environment["STRATA_DATA_URL"], "s3://strata/"), name)
		require.Contains(t, s.Environment["STRATA_DATA_URL"], "endpoint=http://s3:7070", name)
		require.Equal(t, c.Services["s3"].Environment["ROOT_ACCESS_KEY"], s.Environment["AWS_ACCESS_KEY_ID"], name)
		require.Equal(t, c.Services["s3"].Environment["ROOT_SECRET_KEY"], s.Environment["AWS_SECRET_ACCESS_KEY"], name)
		require.Contains(t, s.Environment["STRATA_DATABASE_URL"], "@postgresql:5432/", name)
		require.Equal(t, "temporal:7233", s.Environment["STRATA_TEMPORAL_ADDRESS"], name)
		flags := flagsOf(t, want)
		for k := range s.Environment {
			if f, ok := strings.CutPrefix(k, envPrefix+"_"); ok {
				require.True(t, flags[strings.ReplaceAll(strings.ToLower(f), "_", "-")], "%s: %s is not a flag of strata %s", name, k, want)
			}
		}
	}
	require.NotEqual(t, c.Services["strata-api-1"].Environment["STRATA_INSTANCE_ID"], c.Services["strata-api-2"].Environment["STRATA_INSTANCE_ID"],
		"each API worker owns its own write shard")
	require.Contains(t, c.Services["strata-maintenance"].Environment, "GOMEMLIMIT")
	_, err = os.Stat(filepath.Join(dockerDir(), c.Services["s3"].Build.Context, c.Services["s3"].Build.Dockerfile))
	require.NoError(t, err, "the S3 server's Dockerfile exists")
	for _, v := range []string{"pgdata", "s3data", "promdata"} {
		require.Contains(t, c.Volumes, v)
	}
}

// The Azure and GCS variants (override files on top of docker-compose.yml) swap the object
// storage: an emulator built from its Dockerfile, a one-shot service that creates the container
// or bucket the data URL names (Strata never creates one) before the first Strata process
// starts, and every Strata process pointed at it.
func TestComposeVariantsUseAzureAndGCS(t *testing.T) {
	base := loadCompose(t)
	for file, want := range map[string]struct{ emulator, scheme, address string }{
		"docker-compose.azure.yml": {"azurite", "az://", "BlobEndpoint=http://azurite:10000/"},
		"docker-compose.gcs.yml":   {"gcs", "gs://", "gcs:4443"},
	} {
		c := loadComposeFile(t, file)
		emulator := c.Services[want.emulator]
		require.NotNil(t, emulator.Build, file)
		dockerfile, err := os.ReadFile(filepath.Join(dockerDir(), emulator.Build.Context, emulator.Build.Dockerfile))
		require.NoError(t, err, "%s: the emulator's Dockerfile exists", file)
		port := want.address[strings.LastIndex(want.address, ":")+1:]
		port = strings.TrimSuffix(port, "/")
		require.Contains(t, string(dockerfile), `"`+port+`"`, "%s: the emulator listens where the processes look", file)
		require.Contains(t, c.Volumes, want.emulator+"data", file)

		setup := c.Services["objectstore-setup"]
		require.Equal(t, "strata:local", setup.Image, file)
		require.Len(t, setup.Entrypoint, 2, file)
		require.Equal(t, "makebucket", setup.Entrypoint[0], file)
		var deps map[string]struct{ Condition string }
		api1 := c.Services["strata-api-1"]
		require.NoError(t, api1.DependsOn.Decode(&deps), file)
		require.Equal(t, "service_completed_successfully", deps["objectstore-setup"].Condition,
			"%s: the first Strata process starts once the container or bucket exists", file)
		for _, name := range []string{"objectstore-setup", "strata-api-1", "strata-api-2", "strata-maintenance"} {
			if name != "objectstore-setup" {
				require.Contains(t, base.Services, name, "%s overrides a service of the base file", file)
			}
			env := c.Services[name].Environment
			dataURL := env["STRATA_DATA_URL"]
			require.True(t, strings.HasPrefix(dataURL, want.scheme), "%s: %s stores in %s", file, name, dataURL)
			require.True(t, strings.HasPrefix(dataURL, setup.Entrypoint[1]+"/"), "%s: %s's data URL is in the bucket objectstore-setup creates", file, name)
			joined := env["AZURE_STORAGE_CONNECTION_STRING"] + env["STORAGE_EMULATOR_HOST"]
			require.Contains(t, joined, want.address, "%s: %s reaches the emulator", file, name)
		}
	}
	_, err := os.Stat(filepath.Join(testenv.RepoRoot(), "internal", "emulators", "makebucket", "main.go"))
	require.NoError(t, err, "the image's makebucket command exists")
}

// The compose file is safe by default: every published port is bound to the loopback, Temporal's
// unauthenticated frontend is not published, the API requires tokens, Grafana has no anonymous
// access, and every secret it requires is one docker/gen-env.sh generates.
func TestComposeDefaultsAreSafe(t *testing.T) {
	c := loadCompose(t)
	for name, s := range c.Services {
		for _, p := range s.Ports {
			require.True(t, strings.HasPrefix(p, "127.0.0.1:"), "%s publishes %s beyond the loopback", name, p)
		}
	}
	require.Empty(t, c.Services["temporal"].Ports, "Temporal's frontend is not published")
	for _, name := range []string{"strata-api-1", "strata-api-2"} {
		env := c.Services[name].Environment
		require.Contains(t, env["STRATA_API_TOKEN"], "${STRATA_API_TOKEN:?", name)
		require.Contains(t, env["STRATA_ADMIN_TOKEN"], "${STRATA_ADMIN_TOKEN:?", name)
	}
	require.Equal(t, "false", c.Services["grafana"].Environment["GF_AUTH_ANONYMOUS_ENABLED"])

	raw, err := os.ReadFile(filepath.Join(dockerDir(), "docker-compose.yml"))
	require.NoError(t, err)
	required := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$\{([A-Z_]+):\?`).FindAllStringSubmatch(string(raw), -1) {
		required[m[1]] = true
	}
	require.NotEmpty(t, required)
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join(dockerDir(), "gen-env.sh"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gen-env.sh"), script, 0o755))
	out, err := exec.Command("bash", filepath.Join(dir, "gen-env.sh")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	generated, err := os.ReadFile(filepath.Join(dir, ".env"))
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(dir, ".env"))
	require.NoError(t, err)
	require.Zero(t, info.Mode().Perm()&0o077, "the secrets are readable by their owner alone")
	values := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(generated)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		values[k] = v
	}
	for k := range required {
		require.GreaterOrEqual(t, len(values[k]), 32, "gen-env.sh generates %s", k)
	}
	require.NotEqual(t, values["STRATA_API_TOKEN"], values["STRATA_ADMIN_TOKEN"])
}

func TestPrometheusScrapesEveryStrataProcess(t *testing.T) {
	c := loadCompose(t)
	data, err := os.ReadFile(filepath.Join(dockerDir(), "prometheus.yml"))
	require.NoError(t, err)
	var prom struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal(data, &prom))
	var targets []string
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	for name, s := range c.Services {
		if !strings.HasPrefix(name, "strata-") {
			continue
		}
		addr := s.Environment["STRATA_LISTEN_ADDR"]
		if addr == "" {
			addr = s.Environment["STRATA_METRICS_ADDR"]
		}
		_, port, err := net.SplitHostPort(addr)
		require.NoError(t, err, "%s serves metrics on a known port", name)
		require.Contains(t, targets, name+":"+port, "Prometheus scrapes %s", name)
	}
}

// metricNamesInCode returns every strata_* metric name written as a literal in non-test Go files.
func metricNamesInCode(t *testing.T) map[string]bool {
	re := regexp.MustCompile(`"(strata_[a-z0-9_]+)"`)
	names := map[string]bool{}
	root := testenv.RepoRoot()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			names[m[1]] = true
		}
		return nil
	})
	require.NoError(t, err)
	return names
}

func TestGrafanaDashboardQueriesExistingMetrics(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(dockerDir(), "grafana", "dashboards", "strata.json"))
	require.NoError(t, err)
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(data, &dash))
	require.NotEmpty(t, dash.UID)

	ds, err := os.ReadFile(filepath.Join(dockerDir(), "grafana", "provisioning", "datasources", "prometheus.yml"))
	require.NoError(t, err)
	var datasources struct {
		Datasources []struct{ UID, Type, URL string } `yaml:"datasources"`
	}
	require.NoError(t, yaml.Unmarshal(ds, &datasources))
	require.Len(t, datasources.Datasources, 1)
	require.Equal(t, "http://prometheus:9090", datasources.Datasources[0].URL)

	known := metricNamesInCode(t)
	used := regexp.MustCompile(`strata_[a-z0-9_]+`)
	var titles []string
	for _, p := range dash.Panels {
		titles = append(titles, p.Title)
		require.Equal(t, datasources.Datasources[0].UID, p.Datasource.UID, "panel %q uses the provisioned datasource", p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			for _, m := range used.FindAllString(tg.Expr, -1) {
				base := m
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(m, suffix); ok && known[b] {
						base = b
					}
				}
				require.True(t, known[base], "panel %q queries %s, which no code registers", p.Title, m)
			}
		}
	}
	for _, want := range []string{"Appends", "Read latency", "Pending generations", "Merge memory budget", "Maintenance outcomes"} {
		require.True(t, slices.ContainsFunc(titles, func(s string) bool { return strings.HasPrefix(s, want) }), "a %q panel", want)
	}
}

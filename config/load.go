package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// EnvPrefix starts the name of every environment variable of the bot.
const EnvPrefix = "AGENTFIX_"

// ConfigVar names the YAML file when no --config flag is given.
const ConfigVar = EnvPrefix + "CONFIG"

// DotEnvFile is the name of the .env file read from the working directory.
const DotEnvFile = ".env"

// Load builds the configuration from the defaults, the YAML file at yamlPath
// (none when empty), the .env file in workDir and environ (KEY=value strings,
// as os.Environ returns them; they win over .env). Relative paths are taken
// against workDir. An empty variable counts as unset. The error joins every
// problem found, one a line: a problem in a file starts with the file, line
// and column and names the key as written there; one in the environment
// starts with the variable. The warnings follow the problems, as the caller
// gets no App to ask. Call Validate on the result for the semantic checks.
func Load(yamlPath string, environ []string, workDir string) (*App, error) {
	a := Defaults()
	var errs []error
	if yamlPath != "" {
		errs = append(errs, a.loadYAML(yamlPath, absPath(workDir, yamlPath))...)
	}
	env, warnings, dotEnvErrs := mergeEnv(environ, filepath.Join(workDir, DotEnvFile))
	a.warnings = warnings
	var envErrs []error
	for _, err := range a.loadEnv(env) {
		if _, ok := err.(*fileProblem); ok {
			dotEnvErrs = append(dotEnvErrs, err)
		} else {
			envErrs = append(envErrs, err)
		}
	}
	slices.SortStableFunc(dotEnvErrs, func(x, y error) int { return lineOfProblem(x) - lineOfProblem(y) })
	errs = append(append(errs, dotEnvErrs...), envErrs...)
	a.normalize(workDir)
	if len(errs) > 0 {
		return nil, a.withWarnings(errs)
	}
	return a, nil
}

// withWarnings joins errs and, after them, the warnings: a caller that
// stops at an error loses none of them.
func (a *App) withWarnings(errs []error) error {
	for _, w := range a.warnings {
		errs = append(errs, errors.New(w))
	}
	return errors.Join(errs...)
}

// lineOfProblem returns the line of a problem in a file, 0 for others.
func lineOfProblem(err error) int {
	if p, ok := err.(*fileProblem); ok {
		return p.line
	}
	return 0
}

// origin is where a setting's value came from when it is a line of a file
// (the YAML file or .env): Validate points there.
type origin struct {
	file string
	line int
	key  string // the YAML key; empty for .env
}

// String renders the origin as "max_steps at agentfix.yml:3" or ".env:3".
func (o origin) String() string {
	if o.key != "" {
		return fmt.Sprintf("%s at %s:%d", o.key, o.file, o.line)
	}
	return fmt.Sprintf("%s:%d", o.file, o.line)
}

// setOrigin records where f's value came from; nil for the process
// environment, which needs no pointer (the message names the variable).
func (a *App) setOrigin(f field, o *origin) {
	if o == nil {
		delete(a.origins, f.name())
		return
	}
	if a.origins == nil {
		a.origins = map[string]origin{}
	}
	a.origins[f.name()] = *o
}

// envValue is the value of a variable and the line of .env it came from;
// from nil for the process environment.
type envValue struct {
	value string
	from  *origin
}

// mergeEnv returns the variables of the .env file at dotEnv overlaid with
// environ, warnings about the .env file's permissions, and its problems.
func mergeEnv(environ []string, dotEnv string) (map[string]envValue, []string, []error) {
	env := map[string]envValue{}
	var warnings []string
	var errs []error
	data, err := os.ReadFile(dotEnv)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		errs = append(errs, fmt.Errorf("%s: cannot read the file: %w", dotEnv, err))
	default:
		var vars []dotEnvVar
		vars, errs = parseDotEnv(dotEnv, data)
		for _, v := range vars {
			env[v.key] = envValue{value: v.value, from: &origin{file: dotEnv, line: v.line}}
		}
		if info, err := os.Stat(dotEnv); err == nil && info.Mode().Perm()&0o077 != 0 {
			warnings = append(warnings, fmt.Sprintf("%s is readable by others (mode %#o) and may hold secrets; chmod 600 it", dotEnv, info.Mode().Perm()))
		}
	}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			env[k] = envValue{value: v}
		}
	}
	return env, warnings, errs
}

// loadEnv applies the variables of env to a. A value of the wrong type is a
// problem naming the variable, and the line of .env it is on; an
// AGENTFIX_* variable that names no setting is a warning, with the variable
// it most likely misspells.
func (a *App) loadEnv(env map[string]envValue) []error {
	known := map[string]bool{ConfigVar: true}
	names := []string{ConfigVar}
	yamlOnly := map[string]string{} // variable → key
	var errs []error
	for _, f := range fields(a) {
		if valueKinds[f.value.Type()].parse == nil {
			yamlOnly[f.env] = f.key
			continue
		}
		known[f.env] = true
		names = append(names, f.env)
		v, ok := env[f.env]
		if !ok || v.value == "" {
			continue
		}
		if err := setFromEnv(f.value, v.value); err != nil {
			errs = append(errs, envProblem(f.env, v.from, err.Error()))
			continue
		}
		a.setOrigin(f, v.from)
	}
	var unknown []string
	for k := range env {
		if strings.HasPrefix(k, EnvPrefix) && !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		w := k + " names no setting and is ignored"
		if key, ok := yamlOnly[k]; ok {
			w += "; " + key + " is set in the YAML file only"
		} else if s := suggestVar(k, names); s != "" {
			w += "; did you mean " + s + "?"
		}
		a.warnings = append(a.warnings, envProblem("", env[k].from, w).Error())
	}
	return errs
}

// envProblem is a problem with a variable: at its line of .env when it came
// from there.
func envProblem(variable string, from *origin, msg string) error {
	if from == nil {
		if variable == "" {
			return errors.New(msg)
		}
		return fmt.Errorf("%s: %s", variable, msg)
	}
	return &fileProblem{file: from.file, line: from.line, key: variable, msg: msg}
}

// suggestVar returns the variable among names that the AGENTFIX_* variable
// v most likely misspells: the part after the prefix is compared, or the
// whole name for the variables of the provider SDKs (AGENTFIX_OPENAI_API_KEY
// suggests OPENAI_API_KEY).
func suggestVar(v string, names []string) string {
	bare := make([]string, len(names))
	for i, n := range names {
		bare[i] = strings.TrimPrefix(n, EnvPrefix)
	}
	s := suggest(strings.TrimPrefix(v, EnvPrefix), bare)
	if s == "" {
		return ""
	}
	return names[slices.Index(bare, s)]
}

// normalize puts values into the form the rest of the bot relies on.
func (a *App) normalize(workDir string) {
	a.GitHubAPIURL = withSlash(a.GitHubAPIURL)
	a.GitHubWebURL = withSlash(a.GitHubWebURL)
	a.PublicURL = strings.TrimRight(a.PublicURL, "/")
	if a.DataDir != "" {
		a.DataDir = absPath(workDir, a.DataDir)
	}
	if a.PrivateKeyFile != "" {
		a.PrivateKeyFile = absPath(workDir, a.PrivateKeyFile)
	}
	// A key pasted into one line of an env file has literal \n escapes.
	if a.PrivateKey != "" && !strings.Contains(a.PrivateKey, "\n") {
		a.PrivateKey = strings.ReplaceAll(a.PrivateKey, `\n`, "\n")
	}
	a.LogFormat = strings.ToLower(a.LogFormat)
	a.LogLevel = strings.ToLower(a.LogLevel)
}

func withSlash(u string) string {
	if u == "" || strings.HasSuffix(u, "/") {
		return u
	}
	return u + "/"
}

func absPath(workDir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(workDir, p)
}

package memlimit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// ErrConfig wraps every configuration error of Config.
var ErrConfig = errors.New("memlimit: invalid config")

// v1Unlimited is the smallest cgroup v1 limit taken as "no limit": v1
// reports an unset limit as the largest page-aligned int64.
const v1Unlimited = 1 << 62

// Config says how to derive the Go memory limit.
type Config struct {
	// Ratio is the fraction of the container's limit the Go runtime may
	// use; 0 disables Apply. Between 0 and 1.
	Ratio float64
	// Root is the cgroup file system's mount point; "" means
	// /sys/fs/cgroup. Tests point it at a fake tree.
	Root string
	// SelfCgroup is the file naming the process's cgroups; "" means
	// /proc/self/cgroup.
	SelfCgroup string
}

// DefaultConfig returns a ratio of 0.9 on the real cgroup tree.
func DefaultConfig() Config { return Config{Ratio: 0.9} }

// Validate reports a ratio outside [0, 1].
func (c Config) Validate() error {
	if math.IsNaN(c.Ratio) || c.Ratio < 0 || c.Ratio > 1 {
		return fmt.Errorf("%w: memory_limit_ratio = %v: want 0 (off) to 1", ErrConfig, c.Ratio)
	}
	return nil
}

// Result says what Apply did.
type Result struct {
	// Cgroup is the container's limit in bytes, 0 when none was found.
	Cgroup int64
	// Source is the file the limit came from.
	Source string
	// Limit is the Go memory limit set, 0 when Apply set none.
	Limit int64
	// Reason says why no limit was set: "GOMEMLIMIT", "off", "no cgroup
	// limit".
	Reason string
}

// Apply sets the Go memory limit to cfg.Ratio of the container's memory
// limit, unless GOMEMLIMIT is set (getenv is os.Getenv when nil) or no
// limit is found. It returns what it did; an error means a limit file
// existed but could not be read.
func Apply(cfg Config, getenv func(string) string) (Result, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if getenv("GOMEMLIMIT") != "" {
		return Result{Reason: "GOMEMLIMIT"}, nil
	}
	if cfg.Ratio == 0 {
		return Result{Reason: "off"}, nil
	}
	limit, src, err := CgroupLimit(cfg)
	if err != nil || limit == 0 {
		return Result{Source: src, Reason: "no cgroup limit"}, err
	}
	goLimit := int64(float64(limit) * cfg.Ratio)
	debug.SetMemoryLimit(goLimit)
	return Result{Cgroup: limit, Source: src, Limit: goLimit}, nil
}

// CgroupLimit returns the memory limit of the process's cgroup in bytes
// and the file it read, or 0 when there is none.
func CgroupLimit(cfg Config) (int64, string, error) {
	root, self := cfg.Root, cfg.SelfCgroup
	if root == "" {
		root = "/sys/fs/cgroup"
	}
	if self == "" {
		self = "/proc/self/cgroup"
	}
	v2, v1 := ownCgroups(self)
	var cands []string
	if v2 != "" {
		cands = append(cands, filepath.Join(root, v2, "memory.max"))
	}
	cands = append(cands, filepath.Join(root, "memory.max"))
	if v1 != "" {
		cands = append(cands, filepath.Join(root, "memory", v1, "memory.limit_in_bytes"))
	}
	cands = append(cands, filepath.Join(root, "memory", "memory.limit_in_bytes"), filepath.Join(root, "memory.limit_in_bytes"))
	for _, p := range cands {
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, p, fmt.Errorf("memlimit: %w", err)
		}
		n, err := parseLimit(data)
		if err != nil {
			return 0, p, fmt.Errorf("memlimit: %s: %w", p, err)
		}
		return n, p, nil
	}
	return 0, "", nil
}

// parseLimit reads a limit file's content: a byte count, or "max" (v2)
// or a v1 count of at least v1Unlimited for none (0).
func parseLimit(data []byte) (int64, error) {
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a byte count: %q", s)
	}
	if n >= v1Unlimited || n == 0 {
		return 0, nil
	}
	return int64(n), nil
}

// ownCgroups reads the process's cgroup paths: the unified (v2) one
// ("0::/path") and the v1 memory controller's ("N:memory:/path").
func ownCgroups(path string) (v2, v1 string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case strings.Contains(","+parts[1]+",", ",memory,"):
			v1 = parts[2]
		}
	}
	return v2, v1
}

// Setup is what a daemon's main calls: Apply with ratio on the real cgroup
// tree and the environment, logging the outcome to log.
func Setup(ratio float64, log *slog.Logger) error {
	cfg := DefaultConfig()
	cfg.Ratio = ratio
	res, err := Apply(cfg, nil)
	if err != nil {
		return fmt.Errorf("--memory-limit-ratio: %w", err)
	}
	if res.Limit > 0 {
		log.Info("Go memory limit set from the container's", "limit_bytes", res.Limit, "cgroup_bytes", res.Cgroup, "ratio", ratio, "source", res.Source)
	} else {
		log.Debug("Go memory limit not set from a cgroup", "reason", res.Reason)
	}
	return nil
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/logging"
)

// keygen makes a new API key and prints it with the entry that grants it in
// a key file: the key goes to its holder, the entry (which holds only the
// key's hash) into the key file.
func keygen(args []string, out, logw io.Writer) error {
	fs := flag.NewFlagSet("globald keygen", flag.ContinueOnError)
	fs.SetOutput(logw)
	tenant := fs.String("tenant", "", "the tenant the key belongs to (declared under tenants: in the key file)")
	scopes := fs.String("scopes", "inference", "comma-separated scopes: inference, admin, events")
	name := fs.String("name", "", "a label for people: who holds the key")
	if help, err := logging.ParseFlags(fs, args, out); help || err != nil {
		return err
	}
	if !auth.ValidTenantName(*tenant) {
		return errors.New("keygen: --tenant: want 1-64 letters, digits, '.', '_' or '-'")
	}
	var list []string
	for _, s := range strings.Split(*scopes, ",") {
		s = strings.TrimSpace(s)
		if _, err := auth.ParseScope(s); err != nil {
			return fmt.Errorf("keygen: --scopes: %w", err)
		}
		list = append(list, s)
	}
	key, hash, err := auth.NewKey()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "# The key, for its holder only (it is not stored anywhere):\n#   %s\n", key)
	fmt.Fprintf(out, "# Its entry, for the keys: list of the key file:\n  - sha256: %s\n    tenant: %s\n    scopes: [%s]\n", hash, *tenant, strings.Join(list, ", "))
	if *name != "" {
		fmt.Fprintf(out, "    name: %q\n", *name)
	}
	return nil
}

package snapshot

import (
	"fmt"
	"strconv"
	"strings"
)

// maxHolderBytes bounds what is read of a lock file: LockDir writes a few
// short lines.
const maxHolderBytes = 1024

// parseHolder describes the holder a lock file's contents name (lines of
// key=value: pid, cell, replica, host, since), or "an unknown process"
// when they name no pid (the holder has not written them yet, or the file
// is not ours). The values are quoted, so a hostile file cannot forge the
// rest of the message.
func parseHolder(data []byte) string {
	if len(data) > maxHolderBytes {
		data = data[:maxHolderBytes]
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			fields[k] = v
		}
	}
	pid, err := strconv.Atoi(fields["pid"])
	if err != nil || pid <= 0 {
		return "an unknown process"
	}
	return fmt.Sprintf("pid %d (cell %q, replica %q, host %q, since %q)", pid, fields["cell"], fields["replica"], fields["host"], fields["since"])
}

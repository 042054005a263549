package pause

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep without cancellation reported an early end")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep on a cancelled context reported that the hour passed")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Sleep on a cancelled context took %v", took)
	}
}

package otlptest

import (
	"testing"
	"time"
)

func TestTreeIndentsChildrenInStartOrder(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, int64(ms)*1e6) }
	res := map[string]string{"service.name": "celld", "service.instance.id": "cell-0"}
	spans := []Span{
		{SpanID: "c2", ParentID: "r", Name: "second", Kind: "internal", Start: at(3), Resource: res},
		{SpanID: "r", ParentID: "remote", Name: "root", Kind: "server", Start: at(1), Resource: res},
		{SpanID: "c1", ParentID: "r", Name: "first", Kind: "client", Start: at(2), Resource: res},
		{SpanID: "g", ParentID: "c1", Name: "grandchild", Kind: "internal", Start: at(4), Resource: map[string]string{"service.name": "globald"}},
	}
	want := "root  [celld cell-0, server]\n" +
		"  first  [celld cell-0, client]\n" +
		"    grandchild  [globald, internal]\n" +
		"  second  [celld cell-0, internal]\n"
	if got := Tree(spans); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

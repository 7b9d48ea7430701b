package portal

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/rundbrief/rundbrief/store"
)

// queryPage is the ?page= of a list, from 1 to store.MaxPage: anything else (a
// hand-edited URL) shows the nearest page instead of an error.
func queryPage(r *http.Request) int {
	n, _ := strconv.Atoi(r.URL.Query().Get("page"))
	return min(max(n, 1), store.MaxPage)
}

// pageURL is the address of page n of the list at path under the query q.
func pageURL(path string, q url.Values, n int) string {
	v := url.Values{}
	for k, vs := range q {
		for _, s := range vs {
			if s != "" {
				v.Add(k, s)
			}
		}
	}
	if n > 1 {
		v.Set("page", strconv.Itoa(n))
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

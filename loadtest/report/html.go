package report

import (
	"fmt"
	"io"
	"strings"
)

// Figure is one plot file of a report and its caption.
type Figure struct {
	File, Caption string
}

// Row is one line of an HTML table.
type Row []string

// Page is an index.html: a title, tables of figures and the plots.
type Page struct {
	Title string
	// Notes are paragraphs under the title.
	Notes []string
	// Tables are headed tables (Header then Rows).
	Tables []Table
	// Figures are the SVG files, shown in order.
	Figures []Figure
}

// Table is a table with a caption and a header row.
type Table struct {
	Caption string
	Header  Row
	Rows    []Row
}

// WriteHTML writes p as a self-contained, well-formed (XHTML-compatible)
// page that shows the figures with img elements.
func WriteHTML(w io.Writer, p *Page) error {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n")
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(p.Title))
	b.WriteString(`<style>
body { font-family: Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 900px; color: #111; }
table { border-collapse: collapse; margin: 1em 0 2em 0; }
caption { text-align: left; font-weight: bold; padding-bottom: 0.4em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3em 0.9em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
figure { margin: 0 0 2em 0; }
figcaption { color: #444; font-size: 0.9em; }
img { max-width: 100%; border: 1px solid #eee; }
</style>
</head>
<body>
`)
	fmt.Fprintf(&b, "<h1>%s</h1>\n", esc(p.Title))
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "<p>%s</p>\n", esc(n))
	}
	for _, t := range p.Tables {
		b.WriteString("<table>\n")
		fmt.Fprintf(&b, "<caption>%s</caption>\n<tr>", esc(t.Caption))
		for _, h := range t.Header {
			fmt.Fprintf(&b, "<th>%s</th>", esc(h))
		}
		b.WriteString("</tr>\n")
		for _, r := range t.Rows {
			b.WriteString("<tr>")
			for _, cell := range r {
				fmt.Fprintf(&b, "<td>%s</td>", esc(cell))
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</table>\n")
	}
	for _, fig := range p.Figures {
		fmt.Fprintf(&b, "<figure>\n<img src=\"%s\" alt=\"%s\"/>\n<figcaption>%s</figcaption>\n</figure>\n",
			esc(fig.File), esc(fig.Caption), esc(fig.Caption))
	}
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

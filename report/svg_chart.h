// Charts as inline SVG for the HTML report (report/report_html.h): drawn here, no chart library,
// nothing fetched at view time. Labels are escaped (util/xml_escape.h): they come from input files.
#ifndef XTIMER_REPORT_SVG_CHART_H_
#define XTIMER_REPORT_SVG_CHART_H_

#include <string>
#include <vector>

namespace xtimer {
namespace report {

// One row of a horizontal bar chart: one bar per series (values >= 0; NaN and negatives draw
// none).
struct ChartRow {
  std::string label;
  std::vector<double> values;
  bool highlight = false;  // drawn in the alert colour, label in bold (a straggler)
};

struct Chart {
  std::string title;                // the SVG's <title>, for screen readers and tooltips
  std::string unit;                 // "ms", "TFLOP/s", "GB/s": after each value
  std::vector<std::string> series;  // one name per value of a row; a legend when more than one
  std::vector<ChartRow> rows;
};

// A horizontal bar chart, one row per ChartRow, scaled to the largest value; each bar's value
// written at its end with 3 significant digits. An empty chart gives an SVG saying "no data".
std::string BarChartSvg(const Chart& chart);

}  // namespace report
}  // namespace xtimer

#endif  // XTIMER_REPORT_SVG_CHART_H_

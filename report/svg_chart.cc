#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "util/xml_escape.h"

namespace xtimer {
namespace report {
namespace {

// Labels get 7 px a character, within [kMinLabelWidth, kMaxLabelWidth]; longer ones are cut.
constexpr double kMinLabelWidth = 120, kMaxLabelWidth = 420, kCharWidth = 7;
constexpr double kBarArea = 520, kValueWidth = 110, kBarHeight = 14,
                 kBarGap = 2, kRowGap = 6, kTop = 8;
// Series colours (colour-blind safe pair plus a third), and the alert colour of highlighted rows.
constexpr const char* kColors[] = {"#4477aa", "#66ccee", "#228833"};
constexpr const char* kAlert = "#cc3311";

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string ValueText(double v, const std::string& unit) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3g", v);
  return std::string(b) + (unit.empty() ? "" : " " + unit);
}

bool Drawn(double v) { return std::isfinite(v) && v > 0; }

double RowHeight(size_t series) {
  return static_cast<double>(std::max<size_t>(series, 1)) * (kBarHeight + kBarGap) + kRowGap;
}

void Legend(const Chart& c, double label_width, double y, std::string* out) {
  double x = label_width;
  for (size_t i = 0; i < c.series.size(); ++i) {
    *out += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"12\" height=\"12\" fill=\"" +
            kColors[i % 3] + "\"/><text x=\"" + Num(x + 16) + "\" y=\"" + Num(y + 11) + "\">" +
            XmlEscape(c.series[i]) + "</text>";
    x += 40 + 8 * static_cast<double>(c.series[i].size());
  }
  *out += "\n";
}

std::string Cut(const std::string& label, double label_width) {
  const size_t max = static_cast<size_t>((label_width - 12) / kCharWidth);
  if (label.size() <= max) return label;
  size_t n = max > 3 ? max - 3 : 0;
  while (n > 0 && (static_cast<unsigned char>(label[n]) & 0xC0) == 0x80) --n;  // whole UTF-8
  return label.substr(0, n) + "...";
}

double LabelWidth(const Chart& c) {
  size_t longest = 0;
  for (const ChartRow& r : c.rows) longest = std::max(longest, r.label.size());
  return std::min(kMaxLabelWidth,
                  std::max(kMinLabelWidth, kCharWidth * static_cast<double>(longest) + 12));
}

void Row(const Chart& c, const ChartRow& r, double label_width, double max, double y,
         std::string* out) {
  const size_t n = std::max<size_t>(c.series.size(), 1);
  const double mid = y + (static_cast<double>(n) * (kBarHeight + kBarGap)) / 2 + 4;
  *out += "<text x=\"" + Num(label_width - 6) + "\" y=\"" + Num(mid) +
          "\" text-anchor=\"end\"" + (r.highlight ? " font-weight=\"bold\"" : "") + ">" +
          XmlEscape(Cut(r.label, label_width)) + "</text>";
  for (size_t i = 0; i < n && i < r.values.size(); ++i) {
    const double v = r.values[i], top = y + static_cast<double>(i) * (kBarHeight + kBarGap);
    if (!Drawn(v)) continue;
    const double w = std::max(1.0, kBarArea * v / max);
    *out += "<rect x=\"" + Num(label_width) + "\" y=\"" + Num(top) + "\" width=\"" + Num(w) +
            "\" height=\"" + Num(kBarHeight) + "\" fill=\"" +
            (r.highlight ? kAlert : kColors[i % 3]) + "\"><title>" + XmlEscape(r.label) +
            (c.series.size() > i ? ", " + XmlEscape(c.series[i]) : "") + ": " +
            XmlEscape(ValueText(v, c.unit)) + "</title></rect><text x=\"" +
            Num(label_width + w + 4) + "\" y=\"" + Num(top + kBarHeight - 3) + "\">" +
            XmlEscape(ValueText(v, c.unit)) + "</text>";
  }
  *out += "\n";
}

}  // namespace

std::string BarChartSvg(const Chart& c) {
  double max = 0;
  for (const ChartRow& r : c.rows) {
    for (double v : r.values) {
      if (Drawn(v)) max = std::max(max, v);
    }
  }
  const double legend = c.series.size() > 1 ? 20 : 0;
  const double label_width = LabelWidth(c);
  const double width = label_width + kBarArea + kValueWidth;
  const double height = max > 0 ? kTop + legend + RowHeight(c.series.size()) * c.rows.size() : 30;
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"" +
                    Num(width) + "\" height=\"" + Num(height) + "\" viewBox=\"0 0 " + Num(width) +
                    " " + Num(height) + "\" font-family=\"sans-serif\" font-size=\"12\"><title>" +
                    XmlEscape(c.title) + "</title>\n";
  if (max <= 0) return out + "<text x=\"4\" y=\"20\">no data</text></svg>";
  if (legend > 0) Legend(c, label_width, kTop - 4, &out);
  double y = kTop + legend;
  for (const ChartRow& r : c.rows) {
    Row(c, r, label_width, max, y, &out);
    y += RowHeight(c.series.size());
  }
  return out + "</svg>";
}

}  // namespace report
}  // namespace xtimer

#include "daemon/export/exposition.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

#include <prometheus/text_serializer.h>

namespace xtimer {
namespace daemon {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// As std::ostream writes a double at precision 16 in the classic locale ("%.16g"), with
// prometheus' spellings of NaN and the infinities. Integral values, most of ours, skip printf:
// below 1e15 "%.16g" prints them as plain integers.
void AppendValue(double v, std::string* out) {
  if (std::isnan(v)) {
    out->append("Nan");
  } else if (std::isinf(v)) {
    out->append(v < 0 ? "-Inf" : "+Inf");
  } else if (v == std::trunc(v) && std::fabs(v) < 1e15 && !(v == 0 && std::signbit(v))) {
    char buf[24];
    char* end = buf + sizeof(buf);
    char* p = end;
    uint64_t u = static_cast<uint64_t>(std::fabs(v));
    do {
      *--p = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (v < 0) *--p = '-';
    out->append(p, static_cast<size_t>(end - p));
  } else {
    char buf[40];
    const int n = std::snprintf(buf, sizeof(buf), "%.16g", v);
    out->append(buf, static_cast<size_t>(n));
  }
}

void AppendLabelValue(const std::string& value, std::string* out) {
  for (char c : value) {
    switch (c) {
      case '\n': out->append("\\n"); break;
      case '\\': out->append("\\\\"); break;
      case '"': out->append("\\\""); break;
      default: out->push_back(c);
    }
  }
}

void AppendSample(const std::string& name, const ClientMetric& m, double value, std::string* out) {
  out->append(name);
  if (!m.label.empty()) {
    out->push_back('{');
    for (size_t i = 0; i < m.label.size(); ++i) {
      if (i > 0) out->push_back(',');
      out->append(m.label[i].name);
      out->append("=\"");
      AppendLabelValue(m.label[i].value, out);
      out->push_back('"');
    }
    out->push_back('}');
  }
  out->push_back(' ');
  AppendValue(value, out);
  if (m.timestamp_ms != 0) {
    out->push_back(' ');
    out->append(std::to_string(m.timestamp_ms));
  }
  out->push_back('\n');
}

}  // namespace

void AppendExposition(const std::vector<MetricFamily>& families, std::string* out) {
  for (const MetricFamily& f : families) {
    if (f.type != MetricType::Counter && f.type != MetricType::Gauge) {
      out->append(prometheus::TextSerializer().Serialize({f}));
      continue;
    }
    if (!f.help.empty()) {
      out->append("# HELP ").append(f.name).push_back(' ');
      out->append(f.help).push_back('\n');
    }
    out->append("# TYPE ").append(f.name);
    out->append(f.type == MetricType::Counter ? " counter\n" : " gauge\n");
    for (const ClientMetric& m : f.metric) {
      AppendSample(f.name, m, f.type == MetricType::Counter ? m.counter.value : m.gauge.value, out);
    }
  }
}

}  // namespace daemon
}  // namespace xtimer

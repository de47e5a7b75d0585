#include "gpufair/sim/openb_csv.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_set>

namespace gpufair::sim {
namespace {

// One CSV record on one line. Fields may be double-quoted ("a,b", "say ""hi"""); quoted fields
// spanning lines are not used by the trace and are reported as an error.
Result<std::vector<std::string>> splitRecord(std::string_view line) {
  std::vector<std::string> fields;
  std::string field;
  std::size_t i = 0;
  while (true) {
    field.clear();
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= line.size())
          return Result<std::vector<std::string>>::failure("unterminated quote");
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += line[i++];
      }
      if (i < line.size() && line[i] != ',') {
        return Result<std::vector<std::string>>::failure("text after a closing quote");
      }
    } else {
      const std::size_t end = std::min(line.find(',', i), line.size());
      field.assign(line.substr(i, end - i));
      i = end;
    }
    fields.push_back(field);
    if (i >= line.size()) break;
    ++i;  // the comma
  }
  return fields;
}

bool isMissing(std::string_view v) {
  return v.empty() || v == "nan" || v == "NaN" || v == "NAN";
}

// The records of a CSV text: header names and rows, with their 1-based line numbers.
struct Table {
  std::vector<std::string> header;
  struct Row {
    int line;
    std::vector<std::string> fields;
  };
  std::vector<Row> rows;

  std::optional<std::size_t> column(std::string_view name) const {
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return i;
    }
    return std::nullopt;
  }
};

std::string at(std::string_view source, int line) {
  return std::string(source) + ":" + std::to_string(line) + ": ";
}

Result<Table> parseTable(std::string_view text, std::string_view source) {
  Table t;
  int lineNo = 0;
  std::size_t pos = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") pos = 3;  // UTF-8 byte order mark
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    auto fields = splitRecord(line);
    if (!fields) return Result<Table>::failure(at(source, lineNo) + fields.error());
    if (t.header.empty()) {
      t.header = std::move(fields.value());
      for (auto& h : t.header) {
        while (!h.empty() && (h.back() == ' ' || h.back() == '\t')) h.pop_back();
        while (!h.empty() && (h.front() == ' ' || h.front() == '\t')) h.erase(h.begin());
      }
      continue;
    }
    if (fields->size() != t.header.size()) {
      return Result<Table>::failure(at(source, lineNo) + std::to_string(fields->size()) +
                                    " fields, the header has " + std::to_string(t.header.size()));
    }
    t.rows.push_back({lineNo, std::move(fields.value())});
  }
  if (t.header.empty()) return Result<Table>::failure(std::string(source) + ": no header line");
  return t;
}

// Column lookups and typed field reads that fail with "FILE:LINE: column X: ...".
class RowReader {
 public:
  RowReader(const Table& table, std::string_view source) : table_(table), source_(source) {}

  std::optional<std::string> error;

  std::optional<std::size_t> require(std::initializer_list<std::string_view> names) {
    for (std::string_view n : names) {
      if (auto c = table_.column(n)) return c;
    }
    if (!error) {
      std::string list;
      for (std::string_view n : names) list += (list.empty() ? "" : " or ") + std::string(n);
      error = std::string(source_) + ":1: missing column " + list;
    }
    return std::nullopt;
  }

  // A whole number >= 0; `fallback` when the column is absent or the field is missing.
  std::int64_t integer(const Table::Row& row, std::optional<std::size_t> col, std::string_view name,
                       std::int64_t fallback, bool required = false) {
    if (!col) return fallback;
    const std::string& v = row.fields[*col];
    if (isMissing(v)) {
      if (required) fail(row, name, "no value");
      return fallback;
    }
    std::int64_t n = 0;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    // pandas writes integer columns that had a NaN as floats ("8.0"); accept a zero fraction.
    if (ec == std::errc() && ptr != v.data() + v.size() && *ptr == '.') {
      const char* p = ptr + 1;
      while (p < v.data() + v.size() && *p == '0') ++p;
      if (p == v.data() + v.size() && p > ptr + 1) ptr = p;
    }
    if (ec != std::errc() || ptr != v.data() + v.size()) {
      fail(row, name, "\"" + v + "\" is not a whole number");
      return fallback;
    }
    if (n < 0) fail(row, name, "\"" + v + "\" is negative");
    return n;
  }

  std::string text(const Table::Row& row, std::optional<std::size_t> col) const {
    if (!col || isMissing(row.fields[*col])) return {};
    return row.fields[*col];
  }

  void fail(const Table::Row& row, std::string_view name, const std::string& what) {
    if (!error) error = at(source_, row.line) + "column " + std::string(name) + ": " + what;
  }
  void failRow(const Table::Row& row, const std::string& what) {
    if (!error) error = at(source_, row.line) + what;
  }

 private:
  const Table& table_;
  std::string_view source_;
};

constexpr std::int64_t kMaxGpusPerRow = 1024;

}  // namespace

Result<std::vector<NodeRow>> parseNodeCsv(std::string_view text, std::string_view source) {
  using R = Result<std::vector<NodeRow>>;
  auto table = parseTable(text, source);
  if (!table) return R::failure(table.error());
  RowReader r(*table, source);
  const auto name = r.require({"sn", "name"});
  const auto gpu = r.require({"gpu", "num_gpu"});
  if (r.error) return R::failure(*r.error);
  const auto cpu = table->column("cpu_milli");
  const auto mem = table->column("memory_mib");
  const auto model = table->column("model");

  std::vector<NodeRow> out;
  out.reserve(table->rows.size());
  std::unordered_set<std::string> seen;
  for (const auto& row : table->rows) {
    NodeRow n;
    n.line = row.line;
    n.name = r.text(row, name);
    if (n.name.empty()) r.failRow(row, "a node without a name");
    n.cpuMilli = r.integer(row, cpu, "cpu_milli", 0);
    n.memoryMib = r.integer(row, mem, "memory_mib", 0);
    n.gpus = static_cast<int>(r.integer(row, gpu, "gpu", 0, true));
    if (n.gpus > kMaxGpusPerRow) r.fail(row, "gpu", std::to_string(n.gpus) + " GPUs on one node");
    n.model = r.text(row, model);
    if (!n.name.empty() && !seen.insert(n.name).second)
      r.failRow(row, "node " + n.name + " appears twice");
    if (r.error) return R::failure(*r.error);
    out.push_back(std::move(n));
  }
  return out;
}

Result<std::vector<PodRow>> parsePodCsv(std::string_view text, std::string_view source) {
  using R = Result<std::vector<PodRow>>;
  auto table = parseTable(text, source);
  if (!table) return R::failure(table.error());
  RowReader r(*table, source);
  const auto name = r.require({"name", "job_id"});
  const auto numGpu = r.require({"num_gpu"});
  if (r.error) return R::failure(*r.error);
  const auto cpu = table->column("cpu_milli");
  const auto mem = table->column("memory_mib");
  const auto milli = table->column("gpu_milli");
  const auto spec = table->column("gpu_spec");

  std::vector<PodRow> out;
  out.reserve(table->rows.size());
  for (const auto& row : table->rows) {
    PodRow p;
    p.line = row.line;
    p.name = r.text(row, name);
    if (p.name.empty()) r.failRow(row, "a pod without a name");
    p.cpuMilli = r.integer(row, cpu, "cpu_milli", 0);
    p.memoryMib = r.integer(row, mem, "memory_mib", 0);
    p.numGpu = static_cast<int>(r.integer(row, numGpu, "num_gpu", 0, true));
    if (p.numGpu > kMaxGpusPerRow) r.fail(row, "num_gpu", std::to_string(p.numGpu) + " GPUs");
    if (p.numGpu > 0) {
      p.gpuMilli = r.integer(row, milli, "gpu_milli", kMilliPerGpu);
      if (!r.error && (p.gpuMilli <= 0 || p.gpuMilli > kMilliPerGpu)) {
        r.fail(row, "gpu_milli", std::to_string(p.gpuMilli) + " is not within 1..1000");
      } else if (!r.error && p.numGpu > 1 && p.gpuMilli != kMilliPerGpu) {
        r.fail(row, "gpu_milli",
               std::to_string(p.gpuMilli) + " with num_gpu " + std::to_string(p.numGpu) +
                   ": a share of a GPU is only for num_gpu 1");
      }
      const std::string models = r.text(row, spec);
      std::size_t start = 0;
      while (start <= models.size() && !models.empty()) {
        const std::size_t bar = std::min(models.find('|', start), models.size());
        if (bar > start) p.gpuModels.push_back(models.substr(start, bar - start));
        start = bar + 1;
      }
    }
    if (r.error) return R::failure(*r.error);
    out.push_back(std::move(p));
  }
  return out;
}

Result<std::vector<PodLifetime>> parsePodLifetimes(std::string_view text, std::string_view source) {
  using R = Result<std::vector<PodLifetime>>;
  auto table = parseTable(text, source);
  if (!table) return R::failure(table.error());
  const auto created = table->column("creation_time");
  const auto deleted = table->column("deletion_time");
  if (!created || !deleted) {
    return R::failure(std::string(source) +
                      ":1: no creation_time and deletion_time columns: a replay over time needs "
                      "when each pod was created and deleted (only the openb lists with times, "
                      "e.g. openb_pod_list_default.csv, have them)");
  }
  RowReader r(*table, source);
  std::vector<PodLifetime> out;
  out.reserve(table->rows.size());
  for (const auto& row : table->rows) {
    PodLifetime life;
    life.created = r.integer(row, created, "creation_time", 0, true);
    life.deleted = r.integer(row, deleted, "deletion_time", 0, true);
    if (!r.error && life.deleted < life.created)
      r.fail(row, "deletion_time", "before creation_time");
    if (r.error) return R::failure(*r.error);
    out.push_back(life);
  }
  return out;
}

Result<std::vector<PodLifetime>> loadPodLifetimes(const std::string& path) {
  auto text = readTextFile(path);
  if (!text) return Result<std::vector<PodLifetime>>::failure(text.error());
  return parsePodLifetimes(*text, path);
}

Result<std::string> readTextFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Result<std::string>::failure("cannot read " + path + ": it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Result<std::string>::failure("cannot read " + path + ": no such file or not readable");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Result<std::string>::failure("cannot read " + path + ": read error");
  return buf.str();
}

Result<std::vector<NodeRow>> loadNodeCsv(const std::string& path) {
  auto text = readTextFile(path);
  if (!text) return Result<std::vector<NodeRow>>::failure(text.error());
  return parseNodeCsv(*text, path);
}

Result<std::vector<PodRow>> loadPodCsv(const std::string& path) {
  auto text = readTextFile(path);
  if (!text) return Result<std::vector<PodRow>>::failure(text.error());
  return parsePodCsv(*text, path);
}

}  // namespace gpufair::sim

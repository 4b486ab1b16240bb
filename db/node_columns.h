// The columns of the nodes table declared once, as data: each column's name
// and the Node field it holds. The SQLite and PostgreSQL stores build their
// node INSERT, SELECT and refresh statements and their row mappings from
// this table, so a new node field is one entry here plus a migration in each
// store. Internal to db/.
#ifndef PERFCAST_DB_NODE_COLUMNS_H_
#define PERFCAST_DB_NODE_COLUMNS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/hardware.h"

namespace perfcast::db {

// A column's value as the stores bind and read it. The node's source and
// labels are stored as text (a name, a JSON object).
using NodeCell = std::variant<int64_t, double, std::optional<double>, std::string>;

// Which alternative of NodeCell a column holds.
enum class NodeCellKind { kInteger, kReal, kOptionalReal, kText };

struct NodeColumn {
  absl::string_view name;
  NodeCellKind kind;
  // Whether an agent's upsert of a node already registered overwrites it:
  // the host, the measured rates and the time they were taken change with
  // the machine, the hardware identity does not.
  bool refreshed;
  NodeCell (*get)(const models::Node&);
  void (*set)(NodeCell, models::Node&);
};

// All columns, in the order every statement names them.
absl::Span<const NodeColumn> NodeColumns();

// "name, source, ..." in NodeColumns() order.
std::string NodeColumnList();

// "hostname = ?2, cpu_model = ?3, ..." (`marker` "?" for SQLite, "$" for
// PostgreSQL): the refreshed columns, numbered from 2 in NodeColumns() order;
// parameter 1 is left for the node's name.
std::string NodeRefreshAssignments(absl::string_view marker);

// "registered_at_us <= ?N": the condition under which a refresh applies. A
// node's registered_at_us is when its description was taken (the agent's
// fingerprint); an agent file imported after a newer one of the same node
// must not roll its host and measured rates back (rates measured by an older
// method differ: docs/code-evidence.md, "Launch latency by method"), so the
// newest fingerprint wins whatever the import order.
std::string NodeRefreshGuard(absl::string_view marker);

}  // namespace perfcast::db

#endif  // PERFCAST_DB_NODE_COLUMNS_H_

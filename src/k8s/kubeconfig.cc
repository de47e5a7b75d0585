// kubeconfig files and the in-cluster service account, turned into a ClientConfig.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "gpufair/k8s/client.h"

namespace gpufair::k8s {
namespace {

// A kubeconfig problem, named by field.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string lineOf(const YAML::Node& node) {
  auto mark = node.Mark();
  return mark.is_null() ? "" : " (line " + std::to_string(mark.line + 1) + ")";
}

std::string text(const YAML::Node& node, const std::string& field) {
  if (!node || node.IsNull()) return "";
  if (!node.IsScalar()) throw ConfigError(field + " must be a string" + lineOf(node));
  return node.Scalar();
}

bool flag(const YAML::Node& node, const std::string& field) {
  if (!node || node.IsNull()) return false;
  auto value = text(node, field);
  if (value == "true") return true;
  if (value == "false") return false;
  throw ConfigError(field + " must be true or false" + lineOf(node));
}

int base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

std::string decodeBase64(const std::string& in, const std::string& field) {
  std::string out;
  unsigned bits = 0;
  int count = 0;
  bool padding = false;
  for (char c : in) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    int v = base64Value(c);
    if (v < 0 || padding) throw ConfigError(field + " is not valid base64");
    bits = (bits << 6) | static_cast<unsigned>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xFF);
    }
  }
  if (count >= 6) throw ConfigError(field + " is not valid base64");
  return out;
}

// Inline PEM data (base64 in the file); checked to look like PEM so a mistake is named here.
std::string pemData(const YAML::Node& node, const std::string& field) {
  auto encoded = text(node, field);
  if (encoded.empty()) return "";
  auto pem = decodeBase64(encoded, field);
  if (pem.find("-----BEGIN ") == std::string::npos) {
    throw ConfigError(field + " does not decode to PEM data");
  }
  return pem;
}

std::string resolve(const std::string& path, const std::string& baseDir) {
  if (path.empty() || baseDir.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(baseDir) / path).lexically_normal().string();
}

// The entry named `name` in a list of {name, <key>: {...}}; an undefined node when absent.
YAML::Node findNamed(const YAML::Node& list, const std::string& listName, const std::string& name,
                     const std::string& key) {
  if (!list || list.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  if (!list.IsSequence()) throw ConfigError(listName + " must be a list" + lineOf(list));
  for (const auto& entry : list) {
    if (entry.IsMap() && text(entry["name"], listName + "[].name") == name) {
      auto body = entry[key];
      if (!body || body.IsNull()) return YAML::Node(YAML::NodeType::Map);
      if (!body.IsMap()) {
        throw ConfigError(listName + "[" + name + "]." + key + " must be a mapping" + lineOf(body));
      }
      return body;
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

void readCluster(const YAML::Node& cluster, const std::string& name, const std::string& baseDir,
                 ClientConfig& out) {
  auto field = "cluster \"" + name + "\": ";
  out.server = text(cluster["server"], field + "server");
  if (out.server.empty()) throw ConfigError("cluster \"" + name + "\" has no server");
  out.caData = pemData(cluster["certificate-authority-data"], field + "certificate-authority-data");
  if (out.caData.empty()) {
    out.caFile =
        resolve(text(cluster["certificate-authority"], field + "certificate-authority"), baseDir);
  }
  out.insecureSkipTlsVerify =
      flag(cluster["insecure-skip-tls-verify"], field + "insecure-skip-tls-verify");
}

void readUser(const YAML::Node& user, const std::string& name, const std::string& baseDir,
              ClientConfig& out) {
  auto field = "user \"" + name + "\": ";
  out.token = text(user["token"], field + "token");
  if (out.token.empty())
    out.tokenFile = resolve(text(user["tokenFile"], field + "tokenFile"), baseDir);
  out.clientCertData = pemData(user["client-certificate-data"], field + "client-certificate-data");
  if (out.clientCertData.empty()) {
    out.clientCertFile =
        resolve(text(user["client-certificate"], field + "client-certificate"), baseDir);
  }
  out.clientKeyData = pemData(user["client-key-data"], field + "client-key-data");
  if (out.clientKeyData.empty()) {
    out.clientKeyFile = resolve(text(user["client-key"], field + "client-key"), baseDir);
  }
  bool hasCert = !out.clientCertData.empty() || !out.clientCertFile.empty();
  bool hasKey = !out.clientKeyData.empty() || !out.clientKeyFile.empty();
  if (hasCert != hasKey) {
    throw ConfigError("user \"" + name + "\" has a " +
                      (hasCert ? "client certificate but no client-key"
                               : "client-key but no client certificate"));
  }
  bool hasCredentials = !out.token.empty() || !out.tokenFile.empty() || hasCert;
  if (hasCredentials) return;
  const std::string advice =
      ", which gpufair does not support; use a token, tokenFile or client "
      "certificate (e.g. a ServiceAccount token)";
  if (user["exec"]) {
    auto command = user["exec"].IsMap() ? text(user["exec"]["command"], field + "exec.command")
                                        : std::string();
    throw ConfigError("user \"" + name + "\" uses an exec credential plugin (command \"" + command +
                      "\")" + advice);
  }
  if (user["auth-provider"]) {
    auto provider = user["auth-provider"].IsMap()
                        ? text(user["auth-provider"]["name"], field + "auth-provider.name")
                        : std::string();
    throw ConfigError("user \"" + name + "\" uses the auth-provider \"" + provider + "\"" + advice);
  }
  if (user["username"] || user["password"]) {
    throw ConfigError("user \"" + name + "\" uses basic authentication (username/password)" +
                      advice);
  }
}

ClientConfig parse(const YAML::Node& root, const std::string& baseDir,
                   const std::string& contextOverride) {
  if (!root.IsMap()) throw ConfigError("not a kubeconfig: the document is not a mapping");
  auto kind = text(root["kind"], "kind");
  if (!kind.empty() && kind != "Config") {
    throw ConfigError("kind is \"" + kind + "\", expected \"Config\"");
  }
  auto contextName =
      contextOverride.empty() ? text(root["current-context"], "current-context") : contextOverride;
  if (contextName.empty()) {
    throw ConfigError("no current-context is set and no context was chosen (--context)");
  }
  auto context = findNamed(root["contexts"], "contexts", contextName, "context");
  if (!context.IsDefined()) {
    throw ConfigError("context \"" + contextName + "\" is not in contexts");
  }
  auto cname = "context \"" + contextName + "\"";
  auto clusterName = text(context["cluster"], cname + ": cluster");
  auto userName = text(context["user"], cname + ": user");
  ClientConfig out;
  out.ns = text(context["namespace"], cname + ": namespace");
  if (clusterName.empty()) throw ConfigError(cname + " names no cluster");
  auto cluster = findNamed(root["clusters"], "clusters", clusterName, "cluster");
  if (!cluster.IsDefined()) {
    throw ConfigError(cname + " names cluster \"" + clusterName + "\", which is not in clusters");
  }
  readCluster(cluster, clusterName, baseDir, out);
  if (!userName.empty()) {
    auto user = findNamed(root["users"], "users", userName, "user");
    if (!user.IsDefined()) {
      throw ConfigError(cname + " names user \"" + userName + "\", which is not in users");
    }
    readUser(user, userName, baseDir, out);
  }
  return out;
}

bool readFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  out = text.str();
  return true;
}

std::string trimmed(const std::string& s) {
  auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

}  // namespace

Result<ClientConfig> parseKubeconfig(std::string_view yaml, const std::string& baseDir,
                                     const std::string& context) {
  try {
    return parse(YAML::Load(std::string(yaml)), baseDir, context);
  } catch (const ConfigError& e) {
    return Result<ClientConfig>::failure(e.what());
  } catch (const YAML::Exception& e) {
    return Result<ClientConfig>::failure("invalid YAML: " + std::string(e.what()));
  }
}

Result<ClientConfig> loadKubeconfig(const std::string& path, const std::string& context) {
  std::string yaml;
  if (!readFile(path, yaml)) {
    return Result<ClientConfig>::failure("kubeconfig " + path + ": cannot read the file");
  }
  auto baseDir = std::filesystem::absolute(path).parent_path().string();
  auto config = parseKubeconfig(yaml, baseDir, context);
  if (!config) return Result<ClientConfig>::failure("kubeconfig " + path + ": " + config.error());
  return config;
}

Result<ClientConfig> inClusterConfig(const std::string& root) {
  using R = Result<ClientConfig>;
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    return R::failure(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not "
        "set (use --kubeconfig outside a cluster)");
  }
  std::string hostText = host;
  if (hostText.find(':') != std::string::npos && hostText.front() != '[') {
    hostText = "[" + hostText + "]";  // IPv6
  }
  ClientConfig out;
  out.server = "https://" + hostText + ":" + port;
  out.tokenFile = root + "/token";
  out.caFile = root + "/ca.crt";
  std::string content;
  if (!readFile(out.tokenFile, content) || trimmed(content).empty()) {
    return R::failure("in-cluster: cannot read the service account token " + out.tokenFile);
  }
  if (!readFile(out.caFile, content)) {
    return R::failure("in-cluster: cannot read the cluster CA " + out.caFile);
  }
  if (readFile(root + "/namespace", content)) out.ns = trimmed(content);
  return out;
}

}  // namespace gpufair::k8s

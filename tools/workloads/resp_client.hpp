// A minimal Redis client: RESP commands over a TCP socket, written out in
// pipelined batches, with just enough reply parsing to count replies and read
// INFO. It avoids depending on redis-cli for loading data, and keeps the
// client's own allocations out of the server's numbers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mallard::tool {

class RespClient {
 public:
  RespClient() = default;
  ~RespClient();
  RespClient(const RespClient&) = delete;
  RespClient& operator=(const RespClient&) = delete;

  // Connects to 127.0.0.1:port; false when nothing listens there (yet).
  bool connect_local(int port);
  // Queues one command; nothing is sent until flush_and_read_replies().
  void queue(const std::vector<std::string_view>& arguments);
  // Sends the queued commands and reads one reply per command; throws
  // std::runtime_error on an error reply or a closed connection.
  void flush_and_read_replies();
  // Sends one command and returns its reply's text (bulk or simple string).
  std::string call(const std::vector<std::string_view>& arguments);
  // INFO <section> parsed into field -> value.
  std::map<std::string, std::string> info(std::string_view section);

 private:
  // Writes everything queued, retrying short writes.
  void send_outgoing();
  std::string read_reply();
  std::string read_line();
  void read_exact(std::size_t bytes, std::string& into);
  char next_byte();

  int fd_ = -1;
  std::string outgoing_;
  std::size_t queued_ = 0;
  std::vector<char> incoming_ = std::vector<char>(1 << 16);
  std::size_t incoming_begin_ = 0, incoming_end_ = 0;
};

}  // namespace mallard::tool

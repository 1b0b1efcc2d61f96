//! The settings that name one algorithm of a menu (`MCAST_ALLGATHER`,
//! `MCAST_GATHER`, `MCAST_ALLREDUCE`, `MCAST_ALLTOALL`).

use super::{ENV_ALLGATHER, ENV_ALLREDUCE, ENV_ALLTOALL, ENV_GATHER};
use crate::error::Error;

/// A setting that names one algorithm of a menu: `FromStr` from its
/// names (case-insensitive), `Display` as the first name.
macro_rules! menu {
    ($(#[$doc:meta])* $name:ident, $env:ident { $($(#[$vdoc:meta])* $v:ident = $s:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub enum $name {
            /// Chosen per call by ranks and bytes (every rank chooses alike).
            #[default]
            Auto,
            $($(#[$vdoc])* $v,)+
        }

        impl std::str::FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self, Error> {
                match s.trim().to_ascii_lowercase().as_str() {
                    "auto" => Ok($name::Auto),
                    $($s => Ok($name::$v),)+
                    other => Err(Error::InvalidArgument(format!(
                        "{}={other}: expected auto{}",
                        $env,
                        [$(concat!(", ", $s)),+].concat()
                    ))),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(match self {
                    $name::Auto => "auto",
                    $($name::$v => $s,)+
                })
            }
        }
    };
}

menu! {
    /// `MCAST_ALLGATHER`: how `Comm::allgather` moves the blocks.
    AllgatherAlgorithm, ENV_ALLGATHER {
        /// size − 1 steps, each passing one block to the right neighbour.
        Ring = "ring",
        /// log2 n exchanges with rank xor 2^k, each doubling the blocks
        /// held (a power-of-two rank count; otherwise the ring).
        RecursiveDoubling = "doubling",
        /// Every rank bcasts its block down its own FPFS tree, all at
        /// once (the NIs forward; one collective number per rank).
        Multicast = "multicast",
    }
}

menu! {
    /// `MCAST_GATHER`: how `Comm::gather` and `Comm::scatter` move the
    /// blocks.
    TreeAlgorithm, ENV_GATHER {
        /// The root sends (or receives) every block itself.
        Linear = "linear",
        /// A binomial tree: ⌈log2 n⌉ rounds, subtrees' blocks together.
        Binomial = "binomial",
    }
}

menu! {
    /// `MCAST_ALLREDUCE`: how `Comm::allreduce` combines and spreads the
    /// data (each one's order of reduction: `comm::reduce`'s module docs).
    AllreduceAlgorithm, ENV_ALLREDUCE {
        /// Recursive doubling: log2 p exchanges of the whole buffer (after
        /// folding the ranks beyond a power of two p into their neighbours).
        Doubling = "doubling",
        /// Rabenseifner's: reduce-scatter by recursive halving, then
        /// allgather by recursive doubling (same fold).
        Rabenseifner = "rabenseifner",
        /// Reduce-scatter around the ring, then allgather around it:
        /// 2 (n − 1) steps of 1/n of the buffer each.
        Ring = "ring",
        /// Binomial reduce to rank 0, then the runtime's bcast from rank 0
        /// (`MCAST_ALGORITHM`, FPFS k-binomial by default).
        ReduceBcast = "reduce_bcast",
    }
}

menu! {
    /// `MCAST_ALLTOALL`: how `Comm::alltoall` moves the blocks.
    AlltoallAlgorithm, ENV_ALLTOALL {
        /// size − 1 steps: send to rank + k, receive from rank − k.
        Pairwise = "pairwise",
        /// Bruck's ⌈log2 n⌉ steps, each sending the blocks whose index has
        /// bit k set to rank + 2^k (fewer messages, more bytes).
        Bruck = "bruck",
    }
}
